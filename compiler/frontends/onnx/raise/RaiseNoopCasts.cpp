// Casts to the type a value already has (Hugging Face's `.to(torch.float32)` around every
// norm) and Identity nodes: their readers read the input instead. Runs first, so the
// other patterns and the Llama assembly see one value where the graph had two names.
#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {

int raiseNoopCasts(RaiseContext &c, std::string &error) {
  int removed = 0;
  for (Node &n : c.g.nodes) {
    if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1)
      continue;
    auto in = c.probe.find(n.inputs[0]);
    const bool noop = n.opType == "Identity" ||
                      (n.opType == "Cast" && in != c.probe.end() &&
                       int64_t(in->second.dtype) == n.intAttr("to", -1));
    if (!noop)
      continue;
    const std::string from = n.outputs[0], to = n.inputs[0];
    for (Node &reader : c.g.nodes)
      for (std::string &v : reader.inputs)
        if (v == from)
          v = to;
    for (ValueInfo &o : c.g.outputs)
      if (o.name == from)
        o.name = to;
    ++removed;
  }
  return removed;
}

} // namespace kiln::onnx
