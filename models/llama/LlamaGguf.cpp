#include "models/llama/LlamaGguf.h"

#include <vector>

#include "kiln/quant.h"

namespace kiln::llama {

namespace {

using models::MetaType;
using models::MetaValue;
using models::ModelSource;

// Reads an integer key. Missing: `fallback` if given, else an error.
bool readU32(const ModelSource &f, const std::string &key, uint32_t &out, std::string &error,
             const uint32_t *fallback = nullptr) {
  const MetaValue *v = f.find(key);
  if (!v) {
    if (fallback) {
      out = *fallback;
      return true;
    }
    error = "missing metadata key '" + key + "'";
    return false;
  }
  uint64_t x = 0;
  if (!v->asU64(x) || x > 0xffffffffull) {
    error = "metadata key '" + key + "' must be a non-negative 32-bit integer";
    return false;
  }
  out = uint32_t(x);
  return true;
}

bool readF32(const ModelSource &f, const std::string &key, float &out, std::string &error,
             bool required) {
  const MetaValue *v = f.find(key);
  if (!v) {
    if (!required)
      return true;
    error = "missing metadata key '" + key + "'";
    return false;
  }
  double x = 0;
  if (!v->asF64(x)) {
    error = "metadata key '" + key + "' must be a number";
    return false;
  }
  out = float(x);
  return true;
}

// Checks one tensor: present, decodable format, and ggml dims equal to `dims`.
bool checkTensor(const ModelSource &f, const std::string &name,
                 const std::vector<uint64_t> &dims, std::string &error) {
  const WeightView *t = f.findTensor(name);
  if (!t) {
    error = "missing tensor '" + name + "'";
    return false;
  }
  if (!kiln_ggml_type_name(t->format)) {
    error = "tensor '" + name + "' has type " + std::to_string(t->format) +
            " which kiln does not decode";
    return false;
  }
  if (t->dims != dims) {
    auto show = [](const std::vector<uint64_t> &d) {
      std::string s = "[";
      for (size_t i = 0; i < d.size(); ++i)
        s += (i ? ", " : "") + std::to_string(d[i]);
      return s + "]";
    };
    error = "tensor '" + name + "' has shape " + show(t->dims) + " but the metadata implies " +
            show(dims);
    return false;
  }
  return true;
}

} // namespace

bool configFromSource(const ModelSource &f, LlamaConfig &c, std::string &error) {
  const MetaValue *arch = f.find("general.architecture");
  if (!arch || arch->type != MetaType::String) {
    error = "missing metadata key 'general.architecture'";
    return false;
  }
  if (arch->str != "llama") {
    error = "unsupported architecture '" + arch->str + "' (this builder handles 'llama')";
    return false;
  }
  if (!readU32(f, "llama.context_length", c.contextLength, error) ||
      !readU32(f, "llama.embedding_length", c.dim, error) ||
      !readU32(f, "llama.block_count", c.numLayers, error) ||
      !readU32(f, "llama.feed_forward_length", c.ffnDim, error) ||
      !readU32(f, "llama.attention.head_count", c.numHeads, error) ||
      !readU32(f, "llama.attention.head_count_kv", c.numKvHeads, error, &c.numHeads) ||
      !readF32(f, "llama.attention.layer_norm_rms_epsilon", c.rmsEps, error, true) ||
      !readF32(f, "llama.rope.freq_base", c.ropeTheta, error, false))
    return false;
  c.headDim = c.numHeads ? c.dim / c.numHeads : 0;
  if (!readU32(f, "llama.rope.dimension_count", c.ropeDims, error, &c.headDim))
    return false;

  // Vocabulary: the explicit key, else the tokenizer's token list, else the embedding.
  const WeightView *embd = f.findTensor("token_embd.weight");
  uint32_t vocabFallback = 0;
  if (const MetaValue *toks = f.find("tokenizer.ggml.tokens"))
    vocabFallback = uint32_t(toks->array.size());
  else if (embd && embd->dims.size() == 2)
    vocabFallback = uint32_t(embd->dims[1]);
  if (!readU32(f, "llama.vocab_size", c.vocabSize, error, &vocabFallback))
    return false;
  // llama.cpp's llama architecture rotates adjacent pairs ("norm" rope); a frontend whose
  // weights are not permuted for that (ONNX) says rotate_half.
  c.ropePairing = RopePairing::Adjacent;
  if (const MetaValue *p = f.find(kRopePairingKey)) {
    if (p->type != MetaType::String || (p->str != "adjacent" && p->str != "rotate_half")) {
      error = std::string("metadata key '") + kRopePairingKey +
              "' must be \"adjacent\" or \"rotate_half\"";
      return false;
    }
    c.ropePairing = p->str == "rotate_half" ? RopePairing::RotateHalf : RopePairing::Adjacent;
  }
  c.tiedOutput = f.findTensor("output.weight") == nullptr;
  if (!c.validate(error))
    return false;

  const uint64_t dim = c.dim, kvDim = uint64_t(c.numKvHeads) * c.headDim;
  if (!checkTensor(f, "token_embd.weight", {dim, c.vocabSize}, error) ||
      !checkTensor(f, "output_norm.weight", {dim}, error) ||
      (!c.tiedOutput && !checkTensor(f, "output.weight", {dim, c.vocabSize}, error)))
    return false;
  for (uint32_t l = 0; l < c.numLayers; ++l) {
    const struct {
      const char *suffix;
      std::vector<uint64_t> dims;
    } expected[] = {
        {"attn_norm.weight", {dim}},          {"attn_q.weight", {dim, dim}},
        {"attn_k.weight", {dim, kvDim}},      {"attn_v.weight", {dim, kvDim}},
        {"attn_output.weight", {dim, dim}},   {"ffn_norm.weight", {dim}},
        {"ffn_gate.weight", {dim, c.ffnDim}}, {"ffn_up.weight", {dim, c.ffnDim}},
        {"ffn_down.weight", {c.ffnDim, dim}},
    };
    for (const auto &e : expected)
      if (!checkTensor(f, layerTensor(l, e.suffix), e.dims, error))
        return false;
  }
  return true;
}

models::Metadata metadataFromConfig(const LlamaConfig &c) {
  using models::MetaValue;
  models::Metadata m;
  m["general.architecture"] = MetaValue::ofString("llama");
  m["llama.context_length"] = MetaValue::ofU32(c.contextLength);
  m["llama.embedding_length"] = MetaValue::ofU32(c.dim);
  m["llama.block_count"] = MetaValue::ofU32(c.numLayers);
  m["llama.feed_forward_length"] = MetaValue::ofU32(c.ffnDim);
  m["llama.attention.head_count"] = MetaValue::ofU32(c.numHeads);
  m["llama.attention.head_count_kv"] = MetaValue::ofU32(c.numKvHeads);
  m["llama.attention.layer_norm_rms_epsilon"] = MetaValue::ofF32(c.rmsEps);
  m["llama.rope.freq_base"] = MetaValue::ofF32(c.ropeTheta);
  m["llama.rope.dimension_count"] = MetaValue::ofU32(c.ropeDims);
  m["llama.vocab_size"] = MetaValue::ofU32(c.vocabSize);
  m[kRopePairingKey] = MetaValue::ofString(
      c.ropePairing == RopePairing::RotateHalf ? "rotate_half" : "adjacent");
  return m;
}

} // namespace kiln::llama
