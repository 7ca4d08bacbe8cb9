// Rotary embedding in either convention, recognised by what it computes rather than by
// how it is spelled. For every projection split into heads, t = Transpose(Reshape(proj))
// [batch, heads, seq, d], the nodes that read only t, values derived from it and
// position/shape data (cos/sin tables, slice bounds) form its rotation region. That region
// is run on random t in both probes, and a value of t's shape equal to
//   rotate-half (Hugging Face):  out[i] = t[i] cos(p f_i') + rot(t)[i] sin(p f_i'),
//                                rot(t) = Concat(-t[d/2:], t[:d/2]), i' = i mod d/2
//   adjacent pairs (Meta, GGUF): out[2i] = t[2i] cos(p f_i) - t[2i+1] sin(p f_i), ...
// with f_i = theta^(-2i/d) at positions p = past..past+seq-1 is the RoPE output. theta
// comes from the inverse-frequency (or cos table) constant the tables are computed from:
// its second value, theta^(-2/d), which Llama 3's scaling leaves alone (it divides only the
// low frequencies). Frequencies below theta^(-2i/d) are scaled RoPE, kept as one divisor
// per pair (freq_factors, as GGUF's rope_freqs); frequencies above it are refused. A region
// that multiplies by position tables but matches neither style is an error: other
// positions are not guessed.
#include <algorithm>
#include <cmath>
#include <set>

#include "compiler/frontends/onnx/raise/Raise.h"

namespace kiln::onnx {
namespace {

// The inverse frequencies the tables come from: a constant of d/2 values (first 1) among
// the producers of `from`, or row 1 of a constant cos table [positions, d].
bool inverseFrequencies(const RaiseContext &c, const std::string &from, int64_t d,
                        std::vector<double> &freq) {
  std::vector<std::string> work{from};
  std::set<std::string> seen;
  while (!work.empty() && seen.size() < 400) {
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

// Deterministic values in [-1, 1).
std::vector<double> randomValues(uint64_t n, uint64_t seed) {
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = double(int64_t(seed >> 40) - (int64_t(1) << 23)) / double(int64_t(1) << 23);
  }
  return v;
}

enum class Style { None, RotateHalf, Adjacent };

// Does `out` equal RoPE of `t` ([1, H, S, d]) at positions past.. in `style`?
bool isRope(const Value &t, const Value &out, int64_t past, const std::vector<double> &freq,
            Style style) {
  const int64_t h = t.dims[1], s = t.dims[2], d = t.dims[3], half = d / 2;
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t p = 0; p < s; ++p) {
      const double *x = &t.data[size_t((hh * s + p) * d)];
      const double *y = &out.data[size_t((hh * s + p) * d)];
      for (int64_t i = 0; i < half; ++i) {
        const double a = double(float(double(past + p) * float(freq[size_t(i)])));
        const double cs = std::cos(a), sn = std::sin(a);
        const int64_t i0 = style == Style::RotateHalf ? i : 2 * i;
        const int64_t i1 = style == Style::RotateHalf ? i + half : 2 * i + 1;
        const double e0 = x[i0] * cs - x[i1] * sn, e1 = x[i1] * cs + x[i0] * sn;
        if (std::fabs(y[i0] - e0) > 1e-4 || std::fabs(y[i1] - e1) > 1e-4)
          return false;
      }
    }
  return true;
}

struct Region {
  std::vector<int> nodes;         // in topological order
  std::set<std::string> values;   // t and everything the region computes
  std::vector<std::string> tables; // float inputs with probe data (cos/sin)
};

Region regionOf(const RaiseContext &c, size_t start, const std::string &t) {
  Region r;
  r.values.insert(t);
  for (size_t i = start; i < c.g.nodes.size(); ++i) {
    const Node &n = c.g.nodes[i];
    if (!n.domain.empty())
      continue;
    bool reads = false, closed = true;
    std::vector<std::string> tables;
    for (const std::string &in : n.inputs) {
      if (in.empty())
        continue;
      if (r.values.count(in)) {
        reads = true;
        continue;
      }
      const Value *v = c.data(in);
      if (c.g.constant(in) || (v && c.data2(in))) {
        if (v && (v->dtype == DType::Float || v->dtype == DType::Float16) && !c.g.constant(in))
          tables.push_back(in);
        continue;
      }
      closed = false;
    }
    if (!reads || !closed)
      continue;
    r.nodes.push_back(int(i));
    r.tables.insert(r.tables.end(), tables.begin(), tables.end());
    for (const std::string &o : n.outputs)
      r.values.insert(o);
  }
  return r;
}

// Runs the region on random t with one probe's other values; fills `local`.
bool runRegion(const RaiseContext &c, const Region &r, const std::string &t,
               const std::map<std::string, Value> &probe, uint64_t seed,
               std::map<std::string, Value> &local) {
  Value tv = probe.at(t);
  tv.hasData = true;
  tv.data = randomValues(tv.numElements(), seed);
  local[t] = tv;
  Value absent;
  for (int idx : r.nodes) {
    const Node &n = c.g.nodes[size_t(idx)];
    std::vector<const Value *> in;
    for (const std::string &name : n.inputs) {
      auto l = local.find(name);
      auto p = probe.find(name);
      in.push_back(name.empty() ? &absent : l != local.end() ? &l->second : &p->second);
    }
    std::vector<Value> out;
    std::string ignored;
    if (!evalNode(n, in, out, ignored))
      return false;
    for (size_t k = 0; k < out.size() && k < n.outputs.size(); ++k)
      local[n.outputs[k]] = std::move(out[k]);
  }
  return true;
}

} // namespace

int raiseRope(RaiseContext &c, std::string &error) {
  int raised = 0;
  for (size_t start = 0; start < c.g.nodes.size(); ++start) {
    const Node &split = c.g.nodes[start];
    std::string src;
    if (split.outputs.empty() || !headSplitOf(c, split.outputs[0], src))
      continue;
    const Node *proj = c.def(src);
    if (!proj || proj->domain != "kiln" || proj->opType != "Linear")
      continue;
    const std::string t = split.outputs[0];
    const std::vector<int64_t> td = c.dims(t);
    if (td.size() != 4 || td[0] != 1 || td[3] % 2)
      continue;
    Region r = regionOf(c, start + 1, t);
    if (r.tables.empty())
      continue; // no position tables: the values' heads, not a rotation
    const int64_t d = td[3];
    std::vector<double> freq;
    for (const std::string &table : r.tables)
      if (inverseFrequencies(c, table, d, freq))
        break;
    if (freq.empty()) {
      error = split.describe() + ": the tables multiplied into these heads do not come from "
              "an inverse-frequency constant";
      return -1;
    }
    double theta = d >= 4 ? std::pow(freq[1], -double(d) / 2.0) : 10000.0;
    if (std::fabs(theta - std::round(theta)) < 1e-4 * theta)
      theta = std::round(theta); // float32 inverse frequencies lose the last digits
    // Scaled RoPE (Llama 3): each frequency theta^(-2i/d) / factor_i with factor_i >= 1.
    std::vector<float> factors;
    bool scaled = false;
    for (size_t i = 0; i < freq.size(); ++i) {
      const double plain = std::pow(theta, -2.0 * double(i) / double(d));
      const double factor = freq[i] > 0 ? plain / freq[i] : 0.0;
      if (!(factor >= 1.0 - 1e-5 && factor <= 1e6)) {
        error = split.describe() + ": rotary frequency " + std::to_string(i) + " is " +
                std::to_string(freq[i]) + ", not theta^(-2i/d) = " + std::to_string(plain) +
                " or a fraction of it (scaled RoPE)";
        return -1;
      }
      scaled = scaled || factor > 1.0 + 1e-5;
      factors.push_back(std::fabs(factor - 1.0) <= 1e-5 ? 1.0f : float(factor));
    }
    std::map<std::string, Value> run1, run2;
    if (!runRegion(c, r, t, c.probe, 1, run1) || !runRegion(c, r, t, c.probe2, 2, run2))
      continue;
    // The latest value of t's shape that is RoPE of t.
    std::string root;
    Style style = Style::None;
    for (auto it = r.nodes.rbegin(); it != r.nodes.rend() && root.empty(); ++it) {
      const std::string &out = c.g.nodes[size_t(*it)].outputs[0];
      const Value &a = run1[out], &b = run2[out];
      if (a.dims != td || !a.hasData || !b.hasData || b.dims != run2[t].dims)
        continue;
      for (Style s : {Style::RotateHalf, Style::Adjacent})
        if (isRope(run1[t], a, c.pastLen, freq, s) && isRope(run2[t], b, c.pastLen2, freq, s)) {
          root = out, style = s;
          break;
        }
    }
    if (root.empty()) {
      error = split.describe() + ": these heads are multiplied by position tables, but the "
              "result is neither rotate-half nor adjacent-pair RoPE with theta " +
              std::to_string(theta) + " at positions past..past+seq-1";
      return -1;
    }
    Node k = kilnNode("Rope", root, {src}, c.def(root)->name);
    setFloat(k, "theta", float(theta));
    setInt(k, "heads", td[1]);
    setInt(k, "head_dim", d);
    setString(k, "style", style == Style::RotateHalf ? "rotate_half" : "adjacent");
    if (scaled)
      setFloats(k, "freq_factors", std::move(factors));
    c.replace(std::move(k));
    ++raised;
  }
  return raised;
}

} // namespace kiln::onnx
