// Linear layers: MatMul(x, W) with W a constant [in, out] (torch.onnx's nn.Linear), MatMul
// (x, Transpose(W)) with W [out, in], and Gemm(x, W) without bias. fp16 weights reach the
// MatMul through a Cast.
#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {

int raiseLinear(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (Node &n : c.g.nodes) {
    if (!n.domain.empty() || (n.opType != "MatMul" && n.opType != "Gemm") || n.inputs.size() < 2)
      continue;
    if (c.constant(n.inputs[0]) || c.data(n.inputs[0]))
      continue; // a constant or position-derived left operand (RoPE's outer product) is no layer
    bool storedInOut = true; // [in, out]: the weight is the right operand as is
    std::string weightName;
    const Tensor *w = c.constant(n.inputs[1], &weightName);
    if (!w) {
      const Node *t = c.def(c.skipCasts(n.inputs[1]));
      if (!t || t->opType != "Transpose" || !t->domain.empty())
        continue;
      const Attribute *perm = t->attr("perm");
      if (perm && perm->ints != std::vector<int64_t>{1, 0})
        continue;
      w = c.constant(t->inputs[0], &weightName);
      storedInOut = false;
    }
    if (!w || w->dims.size() != 2)
      continue;
    if (n.opType == "Gemm") {
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
        error = n.describe() + " has a bias; Llama linear layers have none";
        return -1;
      }
      if (n.intAttr("transA", 0) || n.floatAttr("alpha", 1.0f) != 1.0f) {
        error = n.describe() + ": transA or alpha != 1 is not a plain linear layer";
        return -1;
      }
      if (n.intAttr("transB", 0))
        storedInOut = !storedInOut;
    }
    std::vector<int64_t> xd = c.dims(n.inputs[0]);
    const int64_t in = storedInOut ? w->dims[0] : w->dims[1];
    if (xd.empty() || xd.back() != in) {
      error = n.describe() + ": weight '" + weightName + "' does not match its input's width";
      return -1;
    }
    Node k = kilnNode("Linear", n.outputs[0], {n.inputs[0], weightName}, n.name);
    setInt(k, "transposed", storedInOut ? 1 : 0);
    n = std::move(k);
    ++raised;
  }
  return raised;
}

} // namespace kiln::onnx
