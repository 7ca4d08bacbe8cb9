// RMSNorm as exporters write it: w * (x / sqrt(mean(x^2) + eps)), the reciprocal spelled
// Div(1, Sqrt), Reciprocal(Sqrt) or a Div of x, the square Pow(x, 2) or Mul(x, x), with
// Casts around the float32 computation. epsilon must be a constant of the graph.
#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {
namespace {

const Node *op(const RaiseContext &c, const std::string &v, const char *type) {
  const Node *n = c.def(c.skipCasts(v));
  return n && n->domain.empty() && n->opType == type ? n : nullptr;
}

// `v` = Sqrt(mean(x^2) + eps): sets x and eps. Returns 0 on no match, -1 on a match
// whose epsilon is not a constant (error set), 1 on a match.
int sqrtMeanSquare(const RaiseContext &c, const std::string &v, std::string &x, double &eps,
                   std::string &error) {
  const Node *sq = op(c, v, "Sqrt");
  const Node *add = sq ? op(c, sq->inputs[0], "Add") : nullptr;
  if (!add)
    return 0;
  for (int side = 0; side < 2; ++side) {
    const Node *mean = op(c, add->inputs[size_t(side)], "ReduceMean");
    if (!mean || mean->intAttr("keepdims", 1) != 1)
      continue;
    std::vector<int64_t> axes;
    if (const Attribute *a = mean->attr("axes"))
      axes = a->ints;
    else if (mean->inputs.size() > 1)
      if (const Tensor *t = c.constant(mean->inputs[1]))
        for (uint64_t i = 0; i < t->numElements(); ++i)
          axes.push_back(t->intAt(i));
    const size_t rank = c.dims(mean->inputs[0]).size();
    if (axes.size() != 1 || (axes[0] != -1 && axes[0] != int64_t(rank) - 1))
      continue;
    const Node *pow = op(c, mean->inputs[0], "Pow");
    const Node *mul = op(c, mean->inputs[0], "Mul");
    double two = 0;
    if (pow && c.scalar(pow->inputs[1], two) && two == 2.0)
      x = c.skipCasts(pow->inputs[0]);
    else if (mul && c.skipCasts(mul->inputs[0]) == c.skipCasts(mul->inputs[1]))
      x = c.skipCasts(mul->inputs[0]);
    else
      continue;
    if (!c.scalar(add->inputs[size_t(1 - side)], eps) || !(eps > 0)) {
      error = add->describe() + ": the RMSNorm epsilon is not a positive constant";
      return -1;
    }
    return 1;
  }
  return 0;
}

// `v` = x / sqrt(mean(x^2) + eps) in one of its spellings.
int normalized(const RaiseContext &c, const std::string &v, std::string &x, double &eps,
               std::string &error) {
  if (const Node *div = op(c, v, "Div")) // x / Sqrt(...)
    if (int r = sqrtMeanSquare(c, div->inputs[1], x, eps, error); r != 0)
      return r < 0 || x == c.skipCasts(div->inputs[0]) ? r : 0;
  const Node *mul = op(c, v, "Mul");
  if (!mul)
    return 0;
  for (int side = 0; side < 2; ++side) {
    const std::string &r = mul->inputs[size_t(side)];
    std::string root;
    double one = 0;
    if (const Node *d = op(c, r, "Div"); d && c.scalar(d->inputs[0], one) && one == 1.0)
      root = d->inputs[1];
    else if (const Node *rc = op(c, r, "Reciprocal"))
      root = rc->inputs[0];
    else
      continue;
    int m = sqrtMeanSquare(c, root, x, eps, error);
    if (m < 0)
      return -1;
    if (m > 0 && x == c.skipCasts(mul->inputs[size_t(1 - side)]))
      return 1;
  }
  return 0;
}

} // namespace

int raiseRmsNorm(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (Node &n : c.g.nodes) {
    if (!n.domain.empty() || n.opType != "Mul" || n.inputs.size() != 2)
      continue;
    for (int side = 0; side < 2; ++side) {
      std::string weight;
      const Tensor *w = c.constant(n.inputs[size_t(side)], &weight);
      if (!w || w->dims.size() != 1)
        continue;
      std::string x;
      double eps = 0;
      int m = normalized(c, n.inputs[size_t(1 - side)], x, eps, error);
      if (m < 0)
        return -1;
      if (m == 0)
        continue;
      std::vector<int64_t> xd = c.dims(x);
      if (xd.empty() || xd.back() != w->dims[0]) {
        error = n.describe() + ": RMSNorm weight '" + weight + "' has " +
                std::to_string(w->dims[0]) + " elements for rows of " +
                (xd.empty() ? std::string("?") : std::to_string(xd.back()));
        return -1;
      }
      Node k = kilnNode("RmsNorm", n.outputs[0], {x, weight}, n.name);
      setFloat(k, "epsilon", float(eps));
      n = std::move(k);
      ++raised;
      break;
    }
  }
  return raised;
}

} // namespace kiln::onnx
