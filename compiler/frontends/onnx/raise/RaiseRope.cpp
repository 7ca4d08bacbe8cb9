// Rotary embedding, rotate-half convention (Hugging Face):
//   t * cos + Concat(-t[..., d/2:], t[..., :d/2]) * sin
// with t the heads of a projection. theta is recovered from the inverse-frequency (or
// cos table) constant the tables are computed from, then every entry of both probes'
// cos and sin tables is checked against cos/sin(position * theta^(-2i/d)) with the
// positions kiln will feed (past .. past+seq-1): a table that is not plain RoPE (scaled
// frequencies, other positions) is an error, not a guess.
#include <algorithm>
#include <cmath>
#include <set>

#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {
namespace {

const Node *onnxOp(const RaiseContext &c, const std::string &v, const char *type) {
  const Node *n = c.def(v);
  return n && n->domain.empty() && n->opType == type ? n : nullptr;
}

// Start and end of a Slice on the last axis, from constants or the probe.
bool lastAxisSlice(const RaiseContext &c, const Node &s, int64_t &start, int64_t &end) {
  auto first = [&](size_t i, int64_t &out) {
    if (i >= s.inputs.size() || s.inputs[i].empty())
      return false;
    const Value *v = c.data(s.inputs[i]);
    if (!v || v->data.size() != 1)
      return false;
    const double x = v->data[0];
    out = x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : int64_t(x);
    return true;
  };
  std::vector<int64_t> d = c.dims(s.inputs[0]);
  int64_t axis = -1, step = 1;
  if (d.empty() || !first(1, start) || !first(2, end))
    return false;
  if (s.inputs.size() > 3 && !first(3, axis))
    return false;
  if (s.inputs.size() > 4 && !first(4, step))
    return false;
  if ((axis != -1 && axis != int64_t(d.size()) - 1) || step != 1)
    return false;
  const int64_t len = d.back();
  if (start < 0) start += len;
  if (end < 0) end += len;
  end = std::min(end, len);
  return true;
}

// rot = Concat(Neg(t[..., h:]), t[..., :h]): sets t.
bool rotateHalf(const RaiseContext &c, const std::string &rot, std::string &t) {
  const Node *cat = onnxOp(c, rot, "Concat");
  if (!cat || cat->inputs.size() != 2)
    return false;
  const Node *neg = onnxOp(c, cat->inputs[0], "Neg");
  const Node *hi = neg ? onnxOp(c, neg->inputs[0], "Slice") : nullptr;
  const Node *lo = onnxOp(c, cat->inputs[1], "Slice");
  if (!hi || !lo || hi->inputs[0] != lo->inputs[0])
    return false;
  std::vector<int64_t> d = c.dims(hi->inputs[0]);
  int64_t axis = cat->intAttr("axis", 0);
  if (d.empty() || (axis != -1 && axis != int64_t(d.size()) - 1) || d.back() % 2)
    return false;
  int64_t hs, he, ls, le;
  const int64_t half = d.back() / 2;
  if (!lastAxisSlice(c, *hi, hs, he) || !lastAxisSlice(c, *lo, ls, le) || hs != half ||
      he != d.back() || ls != 0 || le != half)
    return false;
  t = hi->inputs[0];
  return true;
}

// The inverse frequencies the tables come from: a constant of d/2 values among the
// table's producers, or row 1 of a constant cos table [positions, d] (cos(1 * f_i)).
bool inverseFrequencies(const RaiseContext &c, const std::string &table, int64_t d,
                        std::vector<double> &freq) {
  std::vector<std::string> work{table};
  std::set<std::string> seen;
  while (!work.empty() && seen.size() < 200) {
    std::string v = work.back();
    work.pop_back();
    if (!seen.insert(v).second)
      continue;
    if (const Tensor *t = c.g.constant(v)) {
      if (int64_t(t->numElements()) == d / 2 && t->at(0) == 1.0) {
        for (uint64_t i = 0; i < t->numElements(); ++i)
          freq.push_back(t->at(i));
        return true;
      }
      if (t->dims.size() == 2 && t->dims[1] == d && t->dims[0] > 1) {
        for (int64_t i = 0; i < d / 2; ++i)
          freq.push_back(std::acos(std::clamp(t->at(uint64_t(d + i)), -1.0, 1.0)));
        return true;
      }
      continue;
    }
    if (const Node *n = c.def(v))
      for (const std::string &in : n->inputs)
        if (!in.empty())
          work.push_back(in);
  }
  return false;
}

// Every entry of `table` (probe values, [.., seq, d] with leading 1s) equals f(pos * freq)
// for pos = past + row.
bool tableMatches(const Value *table, int64_t seq, int64_t past, const std::vector<double> &freq,
                  double (*f)(double)) {
  const int64_t d = int64_t(freq.size()) * 2;
  if (!table || int64_t(table->data.size()) != seq * d)
    return false;
  for (int64_t s = 0; s < seq; ++s)
    for (int64_t i = 0; i < d; ++i) {
      float angle = float(double(past + s) * float(freq[size_t(i % (d / 2))]));
      if (std::fabs(table->data[size_t(s * d + i)] - f(double(angle))) > 1e-4)
        return false;
    }
  return true;
}

} // namespace

int raiseRope(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (Node &n : c.g.nodes) {
    if (!n.domain.empty() || n.opType != "Add" || n.inputs.size() != 2)
      continue;
    for (int side = 0; side < 2; ++side) {
      const Node *mc = onnxOp(c, n.inputs[size_t(side)], "Mul");
      const Node *ms = onnxOp(c, n.inputs[size_t(1 - side)], "Mul");
      if (!mc || !ms)
        continue;
      std::string t, cosT, sinT;
      for (int k = 0; k < 2 && t.empty(); ++k)
        if (rotateHalf(c, ms->inputs[size_t(k)], t))
          sinT = ms->inputs[size_t(1 - k)];
      if (t.empty())
        continue;
      if (mc->inputs[0] == t)
        cosT = mc->inputs[1];
      else if (mc->inputs[1] == t)
        cosT = mc->inputs[0];
      else
        continue;
      std::vector<int64_t> td = c.dims(t);
      std::string src;
      if (td.size() != 4 || !headSplitOf(c, t, src)) {
        error = n.describe() + ": rotary embedding of a value that is not a projection "
                "split into heads [batch, heads, seq, head_dim]";
        return -1;
      }
      const int64_t d = td[3];
      std::vector<double> freq;
      if (!inverseFrequencies(c, cosT, d, freq)) {
        error = n.describe() + ": cannot find the inverse frequencies its cos table is "
                "computed from";
        return -1;
      }
      double theta = d >= 4 ? std::pow(freq[1], -double(d) / 2.0) : 10000.0;
      if (std::fabs(theta - std::round(theta)) < 1e-4 * theta)
        theta = std::round(theta); // float32 inverse frequencies lose the last digits
      for (size_t i = 0; i < freq.size(); ++i)
        if (std::fabs(freq[i] - std::pow(theta, -2.0 * double(i) / double(d))) >
            1e-5 * freq[i] + 1e-7) {
          error = n.describe() + ": rotary frequencies are not theta^(-2i/d) (scaled RoPE "
                  "is not supported)";
          return -1;
        }
      auto sinF = [](double a) { return std::sin(a); };
      auto cosF = [](double a) { return std::cos(a); };
      if (!tableMatches(c.data(cosT), c.seqLen, c.pastLen, freq, +cosF) ||
          !tableMatches(c.data2(cosT), c.seqLen2, c.pastLen2, freq, +cosF) ||
          !tableMatches(c.data(sinT), c.seqLen, c.pastLen, freq, +sinF) ||
          !tableMatches(c.data2(sinT), c.seqLen2, c.pastLen2, freq, +sinF)) {
        error = n.describe() + ": its cos/sin tables are not RoPE at positions past.."
                "past+seq-1 with theta " + std::to_string(theta);
        return -1;
      }
      Node k = kilnNode("Rope", n.outputs[0], {src}, n.name);
      setFloat(k, "theta", float(theta));
      setInt(k, "heads", td[1]);
      setInt(k, "head_dim", d);
      setString(k, "style", "rotate_half");
      n = std::move(k);
      ++raised;
      break;
    }
  }
  return raised;
}

} // namespace kiln::onnx
