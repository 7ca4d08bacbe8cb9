// SwiGLU: silu(gate) * up, with silu exported as gate * Sigmoid(gate).
#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {
namespace {

// `v` = g * Sigmoid(g) (either operand order): sets `gate` to g.
bool isSilu(const RaiseContext &c, const std::string &v, std::string &gate) {
  const Node *m = c.def(v);
  if (!m || !m->domain.empty() || m->opType != "Mul" || m->inputs.size() != 2)
    return false;
  for (int side = 0; side < 2; ++side) {
    const Node *s = c.def(m->inputs[size_t(side)]);
    if (s && s->domain.empty() && s->opType == "Sigmoid" && s->inputs[0] == m->inputs[size_t(1 - side)]) {
      gate = s->inputs[0];
      return true;
    }
  }
  return false;
}

} // namespace

int raiseSwiGlu(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (Node &n : c.g.nodes) {
    if (!n.domain.empty() || n.opType != "Mul" || n.inputs.size() != 2)
      continue;
    std::string gate;
    for (int side = 0; side < 2; ++side) {
      if (!isSilu(c, n.inputs[size_t(side)], gate))
        continue;
      const std::string up = n.inputs[size_t(1 - side)];
      if (c.dims(up) != c.dims(gate))
        continue;
      n = kilnNode("SwiGlu", n.outputs[0], {gate, up}, n.name);
      ++raised;
      break;
    }
  }
  return raised;
}

} // namespace kiln::onnx
