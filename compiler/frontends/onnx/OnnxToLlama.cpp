#include "compiler/frontends/onnx/OnnxToLlama.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "kiln/quant.h"

namespace kiln::onnx {
namespace {

// dst row r = src row srcRow[r] of a [rows, cols] matrix, or of the [cols, rows] matrix
// `src` when `transpose` (in 64x64 tiles, so both sides move whole cache lines).
template <typename T>
void copyRows(const uint8_t *src, uint8_t *dst, uint64_t rows, uint64_t cols,
              const std::vector<uint64_t> &srcRow, bool transpose) {
  // Element copies by memcpy: external data may sit at any byte offset.
  if (!transpose) {
    for (uint64_t r = 0; r < rows; ++r)
      std::memcpy(dst + r * cols * sizeof(T), src + srcRow[r] * cols * sizeof(T),
                  cols * sizeof(T));
    return;
  }
  // Through a 64x64 tile in L1: rows of `src` read whole, rows of `dst` written whole. The
  // direct strided loop (one cache set per tile column) took 11.2 user-s on the TinyLlama
  // shape's 1.9 GB of f16 matrices, this 5.8 (tests/bench/onnx_tinyllama.py).
  T tile[64][64];
  for (uint64_t r0 = 0; r0 < rows; r0 += 64)
    for (uint64_t c0 = 0; c0 < cols; c0 += 64) {
      const uint64_t r1 = std::min(rows, r0 + 64), c1 = std::min(cols, c0 + 64);
      for (uint64_t c = c0; c < c1; ++c)
        for (uint64_t r = r0; r < r1; ++r)
          std::memcpy(&tile[r - r0][c - c0], src + (c * rows + srcRow[r]) * sizeof(T), sizeof(T));
      for (uint64_t r = r0; r < r1; ++r)
        std::memcpy(dst + (r * cols + c0) * sizeof(T), tile[r - r0], (c1 - c0) * sizeof(T));
    }
}

class Assembler {
public:
  Assembler(Graph &g, llama::LlamaConfig &cfg, WeightStore &w) : g_(g), cfg_(cfg), w_(w) {}
  bool run(std::string &error);

private:
  const Node *def(const std::string &v) const {
    auto it = producer_.find(v);
    return it == producer_.end() ? nullptr : &g_.nodes[size_t(it->second)];
  }
  // The kiln node of type `op` producing `v`, or an error naming what is there instead.
  const Node *expect(const std::string &v, const char *op, const char *role);
  bool weight(const std::string &init, const std::string &name, bool transpose,
              uint32_t unpermuteHeads = 0);
  bool checkEpsilon(const Node &norm);
  bool sameMatrix(const Node &emb, const Node &head) const;
  bool layer(const Node &residual2, std::string &hidden);

  Graph &g_;
  llama::LlamaConfig &cfg_;
  WeightStore &w_;
  std::map<std::string, int> producer_;
  std::string error_;
  int layerIndex_ = 0; // counts down while walking from the output
  std::vector<std::vector<std::pair<std::string, std::string>>> pending_; // per layer
  bool haveEps_ = false, haveTheta_ = false;
  bool rotateHalf_ = false; // q/k rows in Hugging Face's order
};

const Node *Assembler::expect(const std::string &v, const char *op, const char *role) {
  const Node *n = def(v);
  if (n && n->domain == "kiln" && n->opType == op)
    return n;
  if (error_.empty())
    error_ = std::string("expected the ") + role + " (" + op + ") to compute '" + v + "', found " +
             (n ? n->describe() : "a graph input or constant");
  return nullptr;
}

// Copies or views initializer `init` as GGUF tensor `name` ([rows, row length] with rows
// the output features). fp16 stays fp16; other float types become f32. `unpermuteHeads`
// > 0 reorders the rows of each of that many heads from rotate-half order (Hugging Face:
// row t*D/2 + i) to adjacent pairs (llama.cpp: row 2i + t), the inverse of the permutation
// Hugging Face's conversion script applies, so the IR is the one the GGUF import builds.
bool Assembler::weight(const std::string &init, const std::string &name, bool transpose,
                       uint32_t unpermuteHeads) {
  const Tensor *t = g_.constant(init);
  if (!t) {
    error_ = "weight '" + init + "' of " + name + " is not a constant";
    return false;
  }
  std::vector<uint64_t> dims;
  uint64_t rows = 1, cols = 1;
  if (t->dims.size() == 1) {
    cols = uint64_t(t->dims[0]);
    dims = {cols};
  } else if (t->dims.size() == 2) {
    rows = uint64_t(transpose ? t->dims[1] : t->dims[0]);
    cols = uint64_t(transpose ? t->dims[0] : t->dims[1]);
    dims = {cols, rows};
  } else {
    error_ = "weight '" + init + "' of " + name + " has rank " + std::to_string(t->dims.size());
    return false;
  }
  if (unpermuteHeads && (rows % (2 * unpermuteHeads) != 0)) {
    error_ = "weight '" + init + "' of " + name + ": " + std::to_string(rows) +
             " rows do not split into " + std::to_string(unpermuteHeads) + " heads of pairs";
    return false;
  }
  const uint64_t headRows = unpermuteHeads ? rows / unpermuteHeads : 1;
  auto sourceRow = [&](uint64_t r) { // GGUF row r comes from this row of the initializer
    if (!unpermuteHeads)
      return r;
    const uint64_t h = r / headRows, j = r % headRows, i = j / 2, t = j % 2;
    return h * headRows + t * (headRows / 2) + i;
  };
  if (t->dtype == DType::Float && !transpose && !unpermuteHeads) {
    w_.add(WeightView{name, KILN_GGML_TYPE_F32, dims, t->data, t->nbytes});
    return true;
  }
  if (t->dtype == DType::Float16 && !transpose && !unpermuteHeads && t->dims.size() == 2) {
    w_.add(WeightView{name, KILN_GGML_TYPE_F16, dims, t->data, t->nbytes});
    return true;
  }
  const bool keepF16 = t->dtype == DType::Float16 && t->dims.size() == 2;
  const size_t es = keepF16 ? 2 : 4;
  std::vector<uint8_t> bytes(rows * cols * es);
  std::vector<uint64_t> srcRow(rows);
  for (uint64_t r = 0; r < rows; ++r)
    srcRow[r] = sourceRow(r);
  if (keepF16 || t->dtype == DType::Float) {
    if (keepF16)
      copyRows<uint16_t>(t->data, bytes.data(), rows, cols, srcRow, transpose);
    else
      copyRows<float>(t->data, bytes.data(), rows, cols, srcRow, transpose);
  } else {
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t c = 0; c < cols; ++c) {
        float f = float(t->at(transpose ? c * rows + srcRow[r] : srcRow[r] * cols + c));
        std::memcpy(bytes.data() + (r * cols + c) * 4, &f, 4);
      }
  }
  w_.addOwned(name, keepF16 ? KILN_GGML_TYPE_F16 : KILN_GGML_TYPE_F32, dims, std::move(bytes));
  return true;
}

// LlamaConfig has one epsilon for every norm.
bool Assembler::checkEpsilon(const Node &n) {
  const float eps = n.floatAttr("epsilon", 0);
  if (haveEps_ && eps != cfg_.rmsEps) {
    error_ = n.describe() + ": epsilon " + std::to_string(eps) + " differs from another norm's " +
             std::to_string(cfg_.rmsEps);
    return false;
  }
  cfg_.rmsEps = eps, haveEps_ = true;
  return true;
}

// One decoder layer, from its second residual add back to the hidden state it reads.
bool Assembler::layer(const Node &res2, std::string &hidden) {
  auto sideOf = [&](const Node &add, const char *op) -> int {
    for (int s = 0; s < 2; ++s) {
      const Node *n = def(add.inputs[size_t(s)]);
      if (n && n->domain == "kiln" && n->opType == op)
        return s;
    }
    return -1;
  };
  // h' = r + down(swiglu(gate(n2), up(n2))), n2 = norm(r)
  int s = -1;
  for (int k = 0; k < 2 && s < 0; ++k) {
    const Node *lin = def(res2.inputs[size_t(k)]);
    const Node *sw = lin && lin->domain == "kiln" && lin->opType == "Linear" ? def(lin->inputs[0]) : nullptr;
    if (sw && sw->domain == "kiln" && sw->opType == "SwiGlu")
      s = k;
  }
  if (s < 0) {
    error_ = res2.describe() + ": expected a residual add of the feed-forward output (Linear of SwiGlu)";
    return false;
  }
  const Node *down = def(res2.inputs[size_t(s)]);
  const std::string r = res2.inputs[size_t(1 - s)];
  const Node *sw = def(down->inputs[0]);
  const Node *gate = expect(sw->inputs[0], "Linear", "feed-forward gate projection");
  const Node *up = expect(sw->inputs[1], "Linear", "feed-forward up projection");
  if (!gate || !up)
    return false;
  if (gate->inputs[0] != up->inputs[0]) {
    error_ = sw->describe() + ": gate and up projections read different inputs";
    return false;
  }
  const Node *n2 = expect(gate->inputs[0], "RmsNorm", "feed-forward norm");
  if (!n2 || n2->inputs[0] != r) {
    if (error_.empty())
      error_ = n2->describe() + ": the feed-forward norm does not read the residual stream";
    return false;
  }
  // r = h + o(attn(rope(q(n1)), rope(k(n1)), v(n1))), n1 = norm(h)
  const Node *res1 = expect(r, "Add", "attention residual add");
  if (!res1)
    return false;
  int a = sideOf(*res1, "Linear");
  const Node *o = a >= 0 ? def(res1->inputs[size_t(a)]) : nullptr;
  const Node *attn = o ? expect(o->inputs[0], "Attention", "attention") : nullptr;
  if (!attn) {
    if (error_.empty())
      error_ = res1->describe() + ": expected a residual add of the attention output projection";
    return false;
  }
  hidden = res1->inputs[size_t(1 - a)];
  const Node *qr = expect(attn->inputs[0], "Rope", "query rotary embedding");
  const Node *kr = expect(attn->inputs[1], "Rope", "key rotary embedding");
  const Node *q = qr ? expect(qr->inputs[0], "Linear", "query projection") : nullptr;
  const Node *k = kr ? expect(kr->inputs[0], "Linear", "key projection") : nullptr;
  const Node *v = expect(attn->inputs[2], "Linear", "value projection");
  if (!q || !k || !v)
    return false;
  if (q->inputs[0] != k->inputs[0] || q->inputs[0] != v->inputs[0]) {
    error_ = attn->describe() + ": q, k and v projections read different inputs";
    return false;
  }
  const Node *n1 = expect(q->inputs[0], "RmsNorm", "attention norm");
  if (!n1)
    return false;
  if (n1->inputs[0] != hidden) {
    error_ = n1->describe() + ": the attention norm does not read the residual stream";
    return false;
  }
  // hyper-parameters, the same for every layer
  const uint32_t heads = uint32_t(attn->intAttr("heads", 0)), kv = uint32_t(attn->intAttr("kv_heads", 0)),
                 hd = uint32_t(attn->intAttr("head_dim", 0));
  const float theta = qr->floatAttr("theta", 0);
  if (kr->floatAttr("theta", 0) != theta ||
      (cfg_.numHeads && (cfg_.numHeads != heads || cfg_.numKvHeads != kv || cfg_.headDim != hd)) ||
      (haveTheta_ && cfg_.ropeTheta != theta)) {
    error_ = attn->describe() + ": heads, head size or RoPE theta differ between layers";
    return false;
  }
  // Llama 3 scaled RoPE: the divisors RaiseRope found, the same for q, k and every layer
  auto factorsOf = [](const Node *n) {
    const Attribute *a = n->attr("freq_factors");
    return a ? a->floats : std::vector<float>();
  };
  const std::vector<float> factors = factorsOf(qr);
  if (factorsOf(kr) != factors || (haveTheta_ && cfg_.ropeFreqFactors != factors)) {
    error_ = attn->describe() + ": the RoPE frequency scaling differs between q, k or layers";
    return false;
  }
  cfg_.numHeads = heads, cfg_.numKvHeads = kv, cfg_.headDim = hd, cfg_.ropeDims = hd;
  cfg_.ropeTheta = theta, haveTheta_ = true, cfg_.ropeFreqFactors = factors;
  const Tensor *gw = g_.constant(gate->inputs[1]);
  const uint32_t ffn = uint32_t(gate->intAttr("transposed", 0) ? gw->dims[1] : gw->dims[0]);
  if (cfg_.ffnDim && cfg_.ffnDim != ffn) {
    error_ = gate->describe() + ": feed-forward width differs between layers";
    return false;
  }
  cfg_.ffnDim = ffn;
  pending_.push_back({{n1->inputs[1], "attn_norm"}, {n2->inputs[1], "ffn_norm"}});
  auto &p = pending_.back();
  auto lin = [&](const Node *n, const char *name) {
    p.push_back({n->inputs[1], std::string(name) + (n->intAttr("transposed", 0) ? "^T" : "")});
  };
  lin(q, "attn_q"), lin(k, "attn_k"), lin(v, "attn_v"), lin(o, "attn_output");
  rotateHalf_ = qr->attr("style") && qr->attr("style")->s == "rotate_half";
  lin(gate, "ffn_gate"), lin(up, "ffn_up"), lin(down, "ffn_down");
  return checkEpsilon(*n1) && checkEpsilon(*n2);
}

// torch.onnx's constant folding stores a tied classifier as a second, transposed copy of
// the embedding table: equal values make it tied again.
bool Assembler::sameMatrix(const Node &emb, const Node &head) const {
  const Tensor *e = g_.constant(emb.inputs[0]), *h = g_.constant(head.inputs[1]);
  const bool t = head.intAttr("transposed", 0) != 0; // h is [dim, vocab]
  if (!e || !h || e->dtype != h->dtype || e->dims.size() != 2 || h->dims.size() != 2 ||
      e->dims[0] != h->dims[t ? 1 : 0] || e->dims[1] != h->dims[t ? 0 : 1])
    return false;
  const uint64_t rows = uint64_t(e->dims[0]), cols = uint64_t(e->dims[1]);
  const size_t es = dtypeSize(e->dtype);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c)
      if (std::memcmp(e->data + (r * cols + c) * es,
                      h->data + (t ? c * rows + r : r * cols + c) * es, es) != 0)
        return false;
  return true;
}

bool Assembler::run(std::string &error) {
  // The classifier output; present.N.* outputs are the KV cache kiln keeps itself.
  std::set<std::string> presents;
  for (const Node &n : g_.nodes)
    if (n.domain == "kiln" && n.opType == "Attention")
      for (const char *key : {"present_key", "present_value"})
        if (const Attribute *a = n.attr(key))
          presents.insert(a->s);
  std::string logits;
  for (const ValueInfo &o : g_.outputs) {
    if (presents.count(o.name))
      continue;
    if (!logits.empty()) {
      error = "graph output '" + o.name + "' is neither the logits ('" + logits +
              "') nor a present key/value an attention node maps onto kiln's KV cache";
      return false;
    }
    logits = o.name;
  }
  g_.outputs.erase(std::remove_if(g_.outputs.begin(), g_.outputs.end(),
                                  [&](const ValueInfo &o) { return o.name != logits; }),
                   g_.outputs.end());
  g_.removeDeadNodes();
  for (const Node &n : g_.nodes)
    if (n.domain != "kiln") {
      error = n.describe() + " could not be raised: it is not part of any structure kiln "
              "recognises (embedding, RMSNorm, linear, RoPE, causal attention, SwiGLU, "
              "residual add)";
      return false;
    }
  for (size_t i = 0; i < g_.nodes.size(); ++i)
    producer_[g_.nodes[i].outputs[0]] = int(i);

  const Node *head = expect(logits, "Linear", "classifier");
  const Node *fnorm = head ? expect(head->inputs[0], "RmsNorm", "final norm") : nullptr;
  if (!fnorm) {
    error = error_;
    return false;
  }
  std::string hidden = fnorm->inputs[0];
  while (true) {
    const Node *n = def(hidden);
    if (n && n->domain == "kiln" && n->opType == "Embedding")
      break;
    if (!n || n->domain != "kiln" || n->opType != "Add") {
      error = "expected a residual add or the token embedding to compute '" + hidden +
              "', found " + (n ? n->describe() : "a graph input");
      return false;
    }
    if (!layer(*n, hidden)) {
      error = error_;
      return false;
    }
  }
  const Node *emb = def(hidden);
  const std::string ids = emb->inputs[1];
  bool idsIsInput = false;
  for (const ValueInfo &in : g_.inputs)
    idsIsInput |= in.name == ids;
  if (!idsIsInput) {
    error = emb->describe() + ": the embedding does not read a graph input (input_ids)";
    return false;
  }
  const Tensor *table = g_.constant(emb->inputs[0]);
  cfg_.vocabSize = uint32_t(table->dims[0]);
  cfg_.dim = uint32_t(table->dims[1]);
  cfg_.numLayers = uint32_t(pending_.size());
  // Rotate-half q/k rows are reordered into adjacent pairs below (one IR for both formats).
  cfg_.ropePairing = llama::RopePairing::Adjacent;
  cfg_.tiedOutput = head->inputs[1] == emb->inputs[0] ? !head->intAttr("transposed", 0)
                                                     : sameMatrix(*emb, *head);
  cfg_.contextLength = 2048; // the graph does not say; OnnxImport reads config.json

  if (!weight(emb->inputs[0], "token_embd.weight", false) ||
      !checkEpsilon(*fnorm) || !weight(fnorm->inputs[1], "output_norm.weight", false) ||
      (!cfg_.tiedOutput &&
       !weight(head->inputs[1], "output.weight", head->intAttr("transposed", 0) != 0))) {
    error = error_;
    return false;
  }
  // pending_ runs from the last layer to the first.
  for (size_t i = 0; i < pending_.size(); ++i) {
    const uint32_t index = uint32_t(pending_.size() - 1 - i);
    for (const auto &[init, role] : pending_[i]) {
      const bool transposed = role.size() > 2 && role.compare(role.size() - 2, 2, "^T") == 0;
      const std::string base = transposed ? role.substr(0, role.size() - 2) : role;
      const uint32_t heads = !rotateHalf_          ? 0
                             : base == "attn_q" ? cfg_.numHeads
                             : base == "attn_k" ? cfg_.numKvHeads
                                                : 0;
      if (!weight(init, llama::layerTensor(index, (base + ".weight").c_str()), transposed,
                  heads)) {
        error = error_;
        return false;
      }
    }
  }
  if (!cfg_.validate(error))
    return false;
  return true;
}

} // namespace

bool assembleLlama(Graph &g, llama::LlamaConfig &config, WeightStore &weights,
                   std::string &error) {
  return Assembler(g, config, weights).run(error);
}

} // namespace kiln::onnx
