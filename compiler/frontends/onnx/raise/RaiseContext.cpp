#include "compiler/frontends/onnx/raise/Raise.h"

#include <cmath>
#include <set>

namespace kiln::onnx {

void RaiseContext::reindex() {
  producer_.clear();
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string &o : g.nodes[i].outputs)
      producer_[o] = int(i);
}

const Node *RaiseContext::def(const std::string &value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : &g.nodes[size_t(it->second)];
}

std::string RaiseContext::skipCasts(std::string value) const {
  for (const Node *n = def(value); n && n->domain.empty() &&
                                   (n->opType == "Identity" || n->opType == "Cast");
       n = def(value))
    value = n->inputs.at(0);
  return value;
}

const Tensor *RaiseContext::constant(const std::string &value, std::string *name) const {
  std::string v = skipCasts(value);
  if (name)
    *name = v;
  return g.constant(v);
}

bool RaiseContext::scalar(const std::string &value, double &out) const {
  if (const Tensor *t = constant(value); t && t->numElements() == 1) {
    out = t->at(0);
    return true;
  }
  const Value *a = data(value), *b = data2(value);
  if (a && b && a->data.size() == 1 && b->data.size() == 1 && a->data[0] == b->data[0]) {
    out = a->data[0];
    return true;
  }
  return false;
}

std::vector<int64_t> RaiseContext::dims(const std::string &value) const {
  auto it = probe.find(value);
  return it == probe.end() ? std::vector<int64_t>{} : it->second.dims;
}

const Value *RaiseContext::data(const std::string &value) const {
  auto it = probe.find(value);
  return it != probe.end() && it->second.hasData ? &it->second : nullptr;
}

const Value *RaiseContext::data2(const std::string &value) const {
  auto it = probe2.find(value);
  return it != probe2.end() && it->second.hasData ? &it->second : nullptr;
}

void RaiseContext::replace(Node node) {
  auto it = producer_.find(node.outputs.at(0));
  g.nodes[size_t(it->second)] = std::move(node);
}

namespace {
bool isPerm0213(const Node *n) {
  const Attribute *p = n ? n->attr("perm") : nullptr;
  return n && n->domain.empty() && n->opType == "Transpose" && p &&
         p->ints == std::vector<int64_t>{0, 2, 1, 3};
}
} // namespace

bool headSplitOf(const RaiseContext &c, const std::string &heads, std::string &src) {
  const Node *t = c.def(heads);
  if (!isPerm0213(t))
    return false;
  const Node *r = c.def(t->inputs[0]);
  if (!r || !r->domain.empty() || r->opType != "Reshape")
    return false;
  std::vector<int64_t> in = c.dims(r->inputs[0]), out = c.dims(r->outputs[0]);
  if (in.size() != 3 || out.size() != 4 || in[0] != out[0] || in[1] != out[1] ||
      in[2] != out[2] * out[3])
    return false;
  src = r->inputs[0];
  return true;
}

bool headMergeOf(const RaiseContext &c, const std::string &merged, std::string &x) {
  const Node *r = c.def(merged);
  if (!r || !r->domain.empty() || r->opType != "Reshape")
    return false;
  const Node *t = c.def(r->inputs[0]);
  if (!isPerm0213(t))
    return false;
  std::vector<int64_t> in = c.dims(t->inputs[0]), out = c.dims(merged);
  if (in.size() != 4 || out.size() != 3 || in[0] != out[0] || in[2] != out[1] ||
      in[1] * in[3] != out[2])
    return false;
  x = t->inputs[0];
  return true;
}

Node kilnNode(const std::string &op, const std::string &out, std::vector<std::string> inputs,
              const std::string &name) {
  Node n;
  n.domain = "kiln", n.opType = op, n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = {out};
  return n;
}

void setInt(Node &n, const std::string &key, int64_t v) {
  Attribute a;
  a.kind = Attribute::Int, a.i = v;
  n.attrs[key] = a;
}

void setFloat(Node &n, const std::string &key, float v) {
  Attribute a;
  a.kind = Attribute::Float, a.f = v;
  n.attrs[key] = a;
}

void setFloats(Node &n, const std::string &key, std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Floats, a.floats = std::move(v);
  n.attrs[key] = a;
}

void setString(Node &n, const std::string &key, const std::string &v) {
  Attribute a;
  a.kind = Attribute::String, a.s = v;
  n.attrs[key] = a;
}

namespace {

// Sizes for the symbolic dimensions exporters name: batch 1, the new tokens `seq`, the
// cached tokens `past`, and sums of those ("past_sequence_length + sequence_length").
bool bindSymbol(const std::string &sym, int64_t seq, int64_t past, int64_t &out) {
  if (sym.find('+') != std::string::npos) {
    out = 0;
    size_t start = 0;
    while (start <= sym.size()) {
      size_t plus = sym.find('+', start);
      std::string term = sym.substr(start, plus == std::string::npos ? std::string::npos
                                                                      : plus - start);
      while (!term.empty() && term.front() == ' ') term.erase(term.begin());
      while (!term.empty() && term.back() == ' ') term.pop_back();
      int64_t v;
      if (!term.empty() && std::isdigit(static_cast<unsigned char>(term[0])))
        v = std::stoll(term);
      else if (!bindSymbol(term, seq, past, v))
        return false;
      out += v;
      if (plus == std::string::npos)
        break;
      start = plus + 1;
    }
    return true;
  }
  if (sym.find("batch") != std::string::npos)
    out = 1;
  else if (sym.find("total") != std::string::npos)
    out = seq + past;
  else if (sym.find("past") != std::string::npos)
    out = past;
  else if (sym.find("seq") != std::string::npos || sym.find("len") != std::string::npos)
    out = seq;
  else
    return false;
  return true;
}

bool probeWith(const Graph &g, int64_t seq, int64_t past, std::map<std::string, Value> &values,
               std::string &error) {
  std::map<std::string, int64_t> bindings;
  std::map<std::string, Value> data;
  for (const ValueInfo &in : g.inputs) {
    for (const Dim &d : in.shape) {
      if (d.known())
        continue;
      int64_t v;
      if (!bindSymbol(d.symbol, seq, past, v)) {
        error = "graph input '" + in.name + "' has a dimension '" + d.symbol +
                "' kiln cannot relate to the batch, sequence or past length";
        return false;
      }
      bindings[d.symbol] = v;
    }
    // Inputs whose values shape the computation: all-ones attention mask, positions
    // past..past+seq-1.
    Value v;
    v.dtype = in.dtype, v.hasData = true;
    if (in.name == "attention_mask") {
      v.dims = {1, seq + past};
      v.data.assign(size_t(seq + past), 1.0);
      data[in.name] = v;
    } else if (in.name == "position_ids") {
      v.dims = {1, seq};
      for (int64_t i = 0; i < seq; ++i)
        v.data.push_back(double(past + i));
      data[in.name] = v;
    }
  }
  if (!probeGraph(g, bindings, data, values, error)) {
    error = "while evaluating the graph's shapes: " + error;
    return false;
  }
  return true;
}

} // namespace

bool raiseGraph(Graph &g, std::map<std::string, int> &counts, std::string &error) {
  // Quantised matmuls are refused by name before the probe meets them as unknown ops.
  for (const Node &n : g.nodes)
    if (n.opType == "MatMulNBits" || n.opType == "MatMulInteger" ||
        n.opType == "DynamicQuantizeMatMul" || n.opType == "QLinearMatMul") {
      error = n.describe() + ": quantised matmuls (onnxruntime's MatMulNBits and friends) are "
              "not supported; export float or DequantizeLinear weights and let kiln quantise "
              "(--weights / --precision)";
      return false;
    }
  RaiseContext c(g);
  if (!probeWith(g, c.seqLen, c.pastLen, c.probe, error) ||
      !probeWith(g, c.seqLen2, c.pastLen2, c.probe2, error))
    return false;
  for (const ValueInfo &in : g.inputs)
    c.hasPast |= in.name.rfind("past_key_values", 0) == 0;
  if (!c.hasPast)
    c.pastLen = c.pastLen2 = 0; // positions the graph computes start at 0
  struct Step {
    const char *name;
    int (*run)(RaiseContext &, std::string &);
  } steps[] = {{"noop_casts", raiseNoopCasts}, {"linear", raiseLinear},     {"embedding", raiseEmbedding},
               {"rms_norm", raiseRmsNorm},  {"swiglu", raiseSwiGlu},
               {"rope", raiseRope},         {"attention", raiseAttention},
               {"residual", raiseResidual}};
  for (const Step &s : steps) {
    c.reindex();
    int n = s.run(c, error);
    if (n < 0)
      return false;
    counts[s.name] = n;
    g.removeDeadNodes();
  }
  return true;
}

} // namespace kiln::onnx
