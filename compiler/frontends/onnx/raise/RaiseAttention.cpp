// Causal self-attention with grouped KV heads, as Hugging Face writes it:
//   softmax(q k^T / sqrt(d) + mask) v, heads merged back into [batch, seq, heads*d]
// with q and k the RoPE outputs, k and v optionally appended to past_key_values
// (Concat on the sequence axis, the result being present.N.*) and repeated to the query
// heads (repeat_kv: Unsqueeze, Expand, Reshape). The mask is checked entry by entry in
// both probes: 0 where key j <= past + query i, a large negative number elsewhere.
#include <cmath>

#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {
namespace {

const Node *onnxOp(const RaiseContext &c, const std::string &v, const char *type) {
  const Node *n = c.def(v);
  return n && n->domain.empty() && n->opType == type ? n : nullptr;
}

// repeat_kv: x [B, KV, T, D] -> Unsqueeze(2) -> Expand [B, KV, R, T, D] -> Reshape
// [B, KV*R, T, D]. Sets `x` (the value itself when it is not repeated).
std::string unrepeat(const RaiseContext &c, const std::string &v) {
  const Node *r = onnxOp(c, v, "Reshape");
  const Node *e = r ? onnxOp(c, r->inputs[0], "Expand") : nullptr;
  const Node *u = e ? onnxOp(c, e->inputs[0], "Unsqueeze") : nullptr;
  if (!u)
    return v;
  std::vector<int64_t> x = c.dims(u->inputs[0]), ex = c.dims(e->outputs[0]), out = c.dims(v);
  if (x.size() != 4 || ex.size() != 5 || out.size() != 4 || ex[0] != x[0] || ex[1] != x[1] ||
      ex[3] != x[2] || ex[4] != x[3] || out[1] != x[1] * ex[2] || out[2] != x[2] ||
      out[3] != x[3])
    return v;
  return u->inputs[0];
}

// Concat(past, x) on the sequence axis of [B, H, T, D]: sets past and x.
bool appendsToPast(const RaiseContext &c, const std::string &v, std::string &past,
                   std::string &x) {
  const Node *cat = onnxOp(c, v, "Concat");
  if (!cat || cat->inputs.size() != 2)
    return false;
  const int64_t axis = cat->intAttr("axis", 0);
  if (axis != 2 && axis != -2)
    return false;
  for (const ValueInfo &in : c.g.inputs)
    if (in.name == cat->inputs[0]) {
      past = cat->inputs[0], x = cat->inputs[1];
      return true;
    }
  return false;
}

bool isGraphOutput(const RaiseContext &c, const std::string &v) {
  for (const ValueInfo &o : c.g.outputs)
    if (o.name == v)
      return true;
  return false;
}

// Mask entries: 0 where allowed, <= -1e4 where not.
bool causal(const Value *m, int64_t seq, int64_t past) {
  const int64_t total = seq + past;
  if (!m || m->dims.size() < 2 || m->dims[m->dims.size() - 2] != seq || m->dims.back() != total)
    return false;
  for (size_t e = 0; e < m->data.size(); ++e) {
    int64_t j = int64_t(e % uint64_t(total)), i = int64_t((e / uint64_t(total)) % uint64_t(seq));
    double v = m->data[e];
    if (j <= past + i ? v != 0.0 : v > -1e4)
      return false;
  }
  return true;
}

} // namespace

int raiseAttention(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (Node &root : c.g.nodes) {
    std::string ctxHeads;
    if (!root.domain.empty() || root.opType != "Reshape" || !headMergeOf(c, root.outputs[0], ctxHeads))
      continue;
    const Node *pv = onnxOp(c, ctxHeads, "MatMul");
    const Node *sm = pv ? onnxOp(c, c.skipCasts(pv->inputs[0]), "Softmax") : nullptr;
    if (!sm)
      continue;
    auto fail = [&](const std::string &why) {
      error = "attention at " + sm->describe() + ": " + why;
      return -1;
    };
    const int64_t smAxis = sm->intAttr("axis", -1);
    if (smAxis != -1 && smAxis != 3)
      return fail("softmax is not over the key axis");
    // scores (+ mask)
    std::string scores = c.skipCasts(sm->inputs[0]), mask;
    if (const Node *add = onnxOp(c, scores, "Add")) {
      int m = c.data(add->inputs[1]) ? 1 : c.data(add->inputs[0]) ? 0 : -1;
      if (m < 0)
        return fail("the term added to the scores is not a mask kiln can evaluate");
      mask = add->inputs[size_t(m)], scores = add->inputs[size_t(1 - m)];
    }
    if (mask.empty())
      return fail("no causal mask is added to the scores");
    double scale = 1.0, s = 0;
    if (const Node *div = onnxOp(c, scores, "Div"); div && c.scalar(div->inputs[1], s))
      scale = 1.0 / s, scores = div->inputs[0];
    else if (const Node *mul = onnxOp(c, scores, "Mul"); mul && c.scalar(mul->inputs[1], s))
      scale = s, scores = mul->inputs[0];
    const Node *qk = onnxOp(c, scores, "MatMul");
    const Node *kt = qk ? onnxOp(c, qk->inputs[1], "Transpose") : nullptr;
    const Attribute *perm = kt ? kt->attr("perm") : nullptr;
    if (!kt || !perm || perm->ints != std::vector<int64_t>{0, 1, 3, 2})
      return fail("the scores are not q @ k^T");
    auto producer = [&](const std::string &v) {
      const Node *p = c.def(v);
      return p ? " (it comes from " + p->describe() + ")" : std::string(" (it is a graph input)");
    };
    const Node *qRope = c.def(qk->inputs[0]);
    if (!qRope || qRope->domain != "kiln" || qRope->opType != "Rope")
      return fail("the query is not rotary-embedded heads of a linear projection" +
                  producer(qk->inputs[0]));
    // keys and values: maybe repeated, maybe appended to the cache
    std::string kCat = unrepeat(c, kt->inputs[0]), vCat = unrepeat(c, pv->inputs[1]);
    std::string pastK, pastV, kNew = kCat, vNew = vCat;
    const bool kPast = appendsToPast(c, kCat, pastK, kNew), vPast = appendsToPast(c, vCat, pastV, vNew);
    if (kPast != vPast)
      return fail("only one of key and value is appended to past_key_values");
    const Node *kRope = c.def(kNew);
    if (!kRope || kRope->domain != "kiln" || kRope->opType != "Rope")
      return fail("the key is not rotary-embedded heads of a linear projection" + producer(kNew));
    std::string vSrc;
    if (!headSplitOf(c, vNew, vSrc))
      return fail("the value is not a projection split into heads");
    const int64_t heads = qRope->intAttr("heads", 0), kvHeads = kRope->intAttr("heads", 0),
                  d = qRope->intAttr("head_dim", 0);
    const std::vector<int64_t> vd = c.dims(vNew);
    if (kRope->intAttr("head_dim", 0) != d || vd.size() != 4 || vd[1] != kvHeads ||
        vd[3] != d || kvHeads <= 0 || heads % kvHeads != 0)
      return fail("head counts or sizes do not match (q " + std::to_string(heads) + "x" +
                  std::to_string(d) + ", k " + std::to_string(kvHeads) + ", v " +
                  (vd.size() == 4 ? std::to_string(vd[1]) + "x" + std::to_string(vd[3]) : "?") + ")");
    if (std::fabs(scale * std::sqrt(double(d)) - 1.0) > 1e-5)
      return fail("the score scale " + std::to_string(scale) + " is not 1/sqrt(" +
                  std::to_string(d) + ")");
    if (!causal(c.data(mask), c.seqLen, c.pastLen) || !causal(c.data2(mask), c.seqLen2, c.pastLen2))
      return fail("the mask added to the scores is not causal over past + new tokens");
    Node k = kilnNode("Attention", root.outputs[0], {qk->inputs[0], kNew, vSrc}, root.name);
    setInt(k, "heads", heads);
    setInt(k, "kv_heads", kvHeads);
    setInt(k, "head_dim", d);
    setFloat(k, "scale", float(scale));
    if (kPast) {
      setString(k, "past_key", pastK);
      setString(k, "past_value", pastV);
      if (isGraphOutput(c, kCat))
        setString(k, "present_key", kCat);
      if (isGraphOutput(c, vCat))
        setString(k, "present_value", vCat);
    }
    root = std::move(k);
    ++raised;
  }
  return raised;
}

} // namespace kiln::onnx
