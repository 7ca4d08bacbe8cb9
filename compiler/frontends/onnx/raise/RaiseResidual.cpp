// Residual adds: Add of two activations of the same shape (the hidden state and a block's
// output). Runs last, after the Adds inside RMSNorm, RoPE and attention are raised.
#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {

int raiseResidual(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (Node &n : c.g.nodes) {
    if (!n.domain.empty() || n.opType != "Add" || n.inputs.size() != 2)
      continue;
    if (c.constant(n.inputs[0]) || c.constant(n.inputs[1]))
      continue;
    std::vector<int64_t> a = c.dims(n.inputs[0]), b = c.dims(n.inputs[1]);
    if (a.empty() || a != b || a != c.dims(n.outputs[0]))
      continue;
    n = kilnNode("Add", n.outputs[0], {n.inputs[0], n.inputs[1]}, n.name);
    ++raised;
  }
  return raised;
}

} // namespace kiln::onnx
