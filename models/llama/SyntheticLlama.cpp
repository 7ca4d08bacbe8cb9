#include "models/llama/SyntheticLlama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include "kiln/quant.h"

namespace kiln::llama {

namespace {

// splitmix64: tiny, fast and identical on every platform.
struct Rng {
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull; // the state's step per next()
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += kGamma);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // the state `count` calls of next() ahead, without making them (splitmix64's state is a
  // counter): each tensor is made later, when written, from where it starts in the stream
  Rng skip(uint64_t count) const { return Rng{s + count * kGamma}; }
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  // Box-Muller; deterministic because it uses only IEEE double ops.
  float normal(float stddev) {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300)
      u1 = 1e-300;
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2)) * stddev;
  }
};

// fp32 -> IEEE half, round to nearest even (normal range only: weights are small).
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0)
    return uint16_t(sign); // flush tiny values to zero
  if (exp >= 31)
    return uint16_t(sign | 0x7c00u);
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return uint16_t(h);
}

// Each tensor is made when the writer writes it, from its own copy of the generator state
// (two next() per normal()), so a 7B model is never whole in memory; the bytes are those of
// drawing every tensor in order from one stream.
void addMatrix(models::ModelWriter &w, Rng &rng, const std::string &name, uint64_t cols,
               uint64_t rows, uint32_t type, float stddev) {
  const uint64_t n = cols * rows;
  const Rng start = rng;
  rng = rng.skip(2 * n);
  if (type > 1) { // quantised row by row from the same values (row length checked before)
    uint64_t rowBytes = 0;
    kiln_ggml_row_bytes(type, cols, &rowBytes);
    w.addTensorFill(name, type, {cols, rows}, size_t(rowBytes * rows),
                    [start, cols, rows, rowBytes, type, stddev](uint8_t *dst) {
                      Rng r = start;
                      std::vector<float> row(cols);
                      for (uint64_t i = 0; i < rows; ++i) {
                        for (float &x : row)
                          x = r.normal(stddev);
                        kiln_quantize(type, row.data(), dst + i * rowBytes, cols);
                      }
                    });
    return;
  }
  w.addTensorFill(name, type, {cols, rows}, size_t(n) * (type == 1 ? 2 : 4),
                  [start, n, type, stddev](uint8_t *dst) {
                    Rng r = start;
                    for (uint64_t i = 0; i < n; ++i) {
                      const float x = r.normal(stddev);
                      if (type == 1) {
                        const uint16_t h = toHalf(x);
                        std::memcpy(dst + i * 2, &h, 2);
                      } else {
                        std::memcpy(dst + i * 4, &x, 4);
                      }
                    }
                  });
}

// llama-quantize's use_more_bits(i_layer, n_layers): the layers Q4_K_M gives q6_K.
bool useMoreBits(uint32_t layer, uint32_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

void addNorm(models::ModelWriter &w, Rng &rng, const std::string &name, uint64_t n) {
  std::vector<float> v(n);
  for (float &x : v)
    x = 1.0f + rng.normal(0.1f);
  w.addTensor(name, 0, {n}, v.data(), v.size() * 4);
}

// <unk>, <s>, </s>, the 256 byte tokens, then "▁a".."▁z", "a".."z", pairs "aa".. as
// normal pieces until the vocabulary is full. Scores favour shorter pieces less.
void addVocab(models::ModelWriter &w, uint32_t n) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  std::vector<std::string> pieces;
  for (char c = 'a'; c <= 'z'; ++c)
    pieces.push_back("\xe2\x96\x81" + std::string(1, c));
  for (char c = 'a'; c <= 'z'; ++c)
    pieces.push_back(std::string(1, c));
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b)
      pieces.push_back(std::string(1, a) + b);
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 0; tokens.size() < n; ++i) {
    if (i < pieces.size())
      tokens.push_back(pieces[i]);
    else
      tokens.push_back("<extra_" + std::to_string(i) + ">");
    types.push_back(i < pieces.size() ? 1 : 4);
    scores.push_back(-float(i));
  }
  w.addString("tokenizer.ggml.model", "llama");
  w.addStringArray("tokenizer.ggml.tokens", tokens);
  w.addF32Array("tokenizer.ggml.scores", scores);
  w.addI32Array("tokenizer.ggml.token_type", types);
  w.addU32("tokenizer.ggml.unknown_token_id", 0);
  w.addU32("tokenizer.ggml.bos_token_id", 1);
  w.addU32("tokenizer.ggml.eos_token_id", 2);
}

} // namespace

bool addSyntheticLlama(models::ModelWriter &w, const SyntheticOptions &opts, std::string &error) {
  const LlamaConfig &c = opts.config;
  if (!c.validate(error))
    return false;
  if (!opts.vocabulary && c.vocabSize < 259) {
    error = "synthetic vocabulary needs at least 259 tokens (3 special + 256 bytes)";
    return false;
  }
  const uint32_t types[] = {KILN_GGML_TYPE_F32,  KILN_GGML_TYPE_F16,  KILN_GGML_TYPE_Q8_0,
                            KILN_GGML_TYPE_Q4_0, KILN_GGML_TYPE_Q4_K, KILN_GGML_TYPE_Q5_K,
                            KILN_GGML_TYPE_Q6_K};
  if (std::find(std::begin(types), std::end(types), opts.weightType) == std::end(types)) {
    error = "synthetic weights can be f32, f16, q8_0, q4_0, q4_K, q5_K or q6_K";
    return false;
  }
  // every matrix's rows are dim elements long (ffn_down's ffn): whole blocks of the format
  const bool mix = opts.kMixBase != 0;
  if (mix && opts.kMixBase != KILN_GGML_TYPE_Q4_K && opts.kMixBase != KILN_GGML_TYPE_Q5_K) {
    error = "a synthetic K-quant mix is Q4_K_M or Q5_K_M";
    return false;
  }
  const std::string mixName = opts.kMixBase == KILN_GGML_TYPE_Q5_K ? "Q5_K_M" : "Q4_K_M";
  const uint64_t block = mix ? 256 : kiln_ggml_block_elems(opts.weightType);
  if (c.dim % block || c.ffnDim % block) {
    error = std::string("synthetic ") +
            (mix ? mixName : kiln_ggml_type_name(opts.weightType)) +
            " weights need dim and ffn to be multiples of " + std::to_string(block);
    return false;
  }
  const std::string a = opts.architecture;
  w.addString("general.architecture", a);
  w.addString("general.name", "kiln-synthetic");
  w.addU32(a + ".context_length", c.contextLength);
  w.addU32(a + ".embedding_length", c.dim);
  w.addU32(a + ".block_count", c.numLayers);
  w.addU32(a + ".feed_forward_length", c.ffnDim);
  w.addU32(a + ".attention.head_count", c.numHeads);
  w.addU32(a + ".attention.head_count_kv", c.numKvHeads);
  w.addU32(a + ".rope.dimension_count", c.ropeDims);
  w.addF32(a + ".rope.freq_base", c.ropeTheta);
  w.addF32(a + ".attention.layer_norm_rms_epsilon", c.rmsEps);
  if (opts.vocabulary)
    opts.vocabulary(w);
  else
    addVocab(w, c.vocabSize);

  Rng rng{opts.seed};
  const uint64_t dim = c.dim, kv = uint64_t(c.numKvHeads) * c.headDim;
  const float sd = 1.0f / std::sqrt(float(c.dim));
  const uint32_t q6k = KILN_GGML_TYPE_Q6_K;
  // the type of a matrix: one for all, or Q4_K_M's / Q5_K_M's (classifier q6_K; attn_v and
  // ffn_down q6_K in the layers use_more_bits picks)
  auto typeOf = [&](const char *what, uint32_t layer) {
    if (!mix)
      return opts.weightType;
    const std::string s = what;
    if (s == "output" || (s == "token_embd" && c.tiedOutput))
      return q6k;
    if ((s == "attn_v" || s == "ffn_down") && useMoreBits(layer, c.numLayers))
      return q6k;
    return opts.kMixBase;
  };
  addMatrix(w, rng, "token_embd.weight", dim, c.vocabSize, typeOf("token_embd", 0), 1.0f);
  addNorm(w, rng, "output_norm.weight", dim);
  if (!c.ropeFreqFactors.empty()) // Llama 3 RoPE scaling, as llama.cpp's converter writes it
    w.addTensor("rope_freqs.weight", 0, {c.ropeFreqFactors.size()}, c.ropeFreqFactors.data(),
                c.ropeFreqFactors.size() * 4);
  if (!c.tiedOutput)
    addMatrix(w, rng, "output.weight", dim, c.vocabSize, typeOf("output", 0), sd);
  for (uint32_t l = 0; l < c.numLayers; ++l) {
    auto t = [&](const char *s) { return layerTensor(l, s); };
    addNorm(w, rng, t("attn_norm.weight"), dim);
    addMatrix(w, rng, t("attn_q.weight"), dim, dim, typeOf("attn_q", l), sd);
    addMatrix(w, rng, t("attn_k.weight"), dim, kv, typeOf("attn_k", l), sd);
    addMatrix(w, rng, t("attn_v.weight"), dim, kv, typeOf("attn_v", l), sd);
    addMatrix(w, rng, t("attn_output.weight"), dim, dim, typeOf("attn_output", l), sd);
    addNorm(w, rng, t("ffn_norm.weight"), dim);
    addMatrix(w, rng, t("ffn_gate.weight"), dim, c.ffnDim, typeOf("ffn_gate", l), sd);
    addMatrix(w, rng, t("ffn_up.weight"), dim, c.ffnDim, typeOf("ffn_up", l), sd);
    addMatrix(w, rng, t("ffn_down.weight"), c.ffnDim, dim, typeOf("ffn_down", l),
              1.0f / std::sqrt(float(c.ffnDim)));
  }
  return true;
}

} // namespace kiln::llama
