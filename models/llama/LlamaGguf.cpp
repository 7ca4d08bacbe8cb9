#include "models/llama/LlamaGguf.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
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

// Llama 3's RoPE scaling: rope_freqs.weight, one f32 divisor per rotated pair.
bool readRopeFreqs(const ModelSource &f, LlamaConfig &c, std::string &error) {
  const WeightView *t = f.findTensor(kRopeFreqsTensor);
  if (!t)
    return true;
  if (t->format != KILN_GGML_TYPE_F32 || t->dims != std::vector<uint64_t>{c.ropeDims / 2} ||
      t->nbytes != uint64_t(c.ropeDims / 2) * 4 || !t->data) {
    error = std::string("tensor '") + kRopeFreqsTensor + "' must be f32 of " +
            std::to_string(c.ropeDims / 2) + " values (one per rotated pair)";
    return false;
  }
  c.ropeFreqFactors.resize(c.ropeDims / 2);
  std::memcpy(c.ropeFreqFactors.data(), t->data, t->nbytes);
  return true;
}

// Metadata that changes the math and that kiln does not implement is an error unless it
// holds a neutral value, so a model never runs with part of its definition dropped. The
// keys are those llama.cpp reads for its llama architecture.
bool checkUnsupportedKeys(const ModelSource &f, const LlamaConfig &c, std::string &error) {
  auto onlyNeutral = [&](const char *key, std::initializer_list<double> neutral,
                         const char *what) {
    const MetaValue *v = f.find(key);
    double x = 0;
    if (!v || (v->asF64(x) && std::find(neutral.begin(), neutral.end(), x) != neutral.end()))
      return true;
    error = std::string("metadata key '") + key + "' = " +
            (v->asF64(x) ? std::to_string(x) : std::string("(not a number)")) + " means " +
            what + ", which kiln does not implement";
    return false;
  };
  if (const MetaValue *type = f.find("llama.rope.scaling.type");
      type && !(type->type == MetaType::String && (type->str == "none" || type->str == "linear"))) {
    error = "metadata key 'llama.rope.scaling.type' = '" +
            (type->type == MetaType::String ? type->str : std::string("(not a string)")) +
            "' means RoPE scaling other than Llama 3's rope_freqs, which kiln does not implement";
    return false;
  }
  // A linear factor of 0 (unset) or 1 leaves the angles as they are.
  return onlyNeutral("llama.rope.scaling.factor", {0.0, 1.0}, "linear RoPE scaling") &&
         onlyNeutral("llama.rope.scale_linear", {0.0, 1.0}, "linear RoPE scaling") &&
         onlyNeutral("llama.expert_count", {0.0}, "a mixture of experts") &&
         onlyNeutral("llama.attention.key_length", {double(c.headDim)},
                     "a key width other than embedding / heads") &&
         onlyNeutral("llama.attention.value_length", {double(c.headDim)},
                     "a value width other than embedding / heads");
}

// Every tensor the file holds is one the builder reads: an extra tensor (a bias, a
// mixture-of-experts gate, ...) would otherwise be dropped without a word.
bool checkNoExtraTensors(const ModelSource &f, const LlamaConfig &c, std::string &error) {
  if (!f.weights)
    return true;
  static const char *const kLayerTensors[] = {
      "attn_norm.weight", "attn_q.weight",   "attn_k.weight",   "attn_v.weight",
      "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
      "ffn_down.weight"};
  for (const auto &[name, view] : f.weights->all()) {
    if (name == "token_embd.weight" || name == "output_norm.weight" ||
        name == kRopeFreqsTensor || (!c.tiedOutput && name == "output.weight"))
      continue;
    bool known = false;
    for (uint32_t l = 0; l < c.numLayers && !known; ++l)
      for (const char *suffix : kLayerTensors)
        known = known || name == layerTensor(l, suffix);
    if (!known) {
      error = "tensor '" + name + "' is not part of the llama architecture kiln builds; "
              "running without it would change the model's math";
      return false;
    }
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
  if (!readRopeFreqs(f, c, error) || !c.validate(error) || !checkUnsupportedKeys(f, c, error))
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
  return checkNoExtraTensors(f, c, error);
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
