// Token embedding: Gather(table, input_ids) on axis 0 of a constant [vocab, dim] table.
#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {

int raiseEmbedding(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (Node &n : c.g.nodes) {
    if (!n.domain.empty() || n.opType != "Gather" || n.inputs.size() != 2)
      continue;
    std::string table;
    const Tensor *t = c.constant(n.inputs[0], &table);
    if (!t || t->dims.size() != 2 || n.intAttr("axis", 0) != 0 || c.constant(n.inputs[1]))
      continue;
    n = kilnNode("Embedding", n.outputs[0], {table, n.inputs[1]}, n.name);
    ++raised;
  }
  return raised;
}

} // namespace kiln::onnx
