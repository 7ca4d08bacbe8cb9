//===- SyntheticLlama.h - deterministic random-weight Llama models --------===//
//
// For tests (a tiny model the lit tests write themselves) and for performance work on
// model sizes the shared folder does not hold. Same seed + options => same bytes.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_LLAMA_SYNTHETICLLAMA_H
#define KILN_MODELS_LLAMA_SYNTHETICLLAMA_H

#include <cstdint>
#include <functional>
#include <string>

#include "models/ModelWriter.h"
#include "models/llama/LlamaConfig.h"

namespace kiln::llama {

struct SyntheticOptions {
  LlamaConfig config;          // vocabSize >= 259 (3 specials + 256 byte tokens)
  uint64_t seed = 1;
  // ggml id of the matrices: f32, f16, or a format kiln_quantize writes with ggml's own
  // algorithms (q8_0, q4_0, q4_K, q5_K, q6_K), so a quantised file is the one llama.cpp's
  // quantizer makes of the f32 weights; norms stay f32.
  uint32_t weightType = 0;
  // llama.cpp's Q4_K_M / Q5_K_M mix instead of one type when set to q4_K / q5_K
  // (llama-quantize's per-tensor rule): q6_K for the classifier (the token embedding when
  // tied) and for attn_v / ffn_down in the layers its use_more_bits picks (the first and
  // last eighth, and every third in between), kMixBase for every other matrix.
  uint32_t kMixBase = 0;
  std::string architecture = "llama"; // written as general.architecture
  // Writes the tokenizer.ggml.* keys instead of the built-in SentencePiece vocabulary (a
  // byte-level one from a tokenizer.json, say); config.vocabSize must be its size.
  std::function<void(models::ModelWriter &)> vocabulary;
};

// Adds metadata, an SPM vocabulary and every tensor to `w` (callers may add more); the
// GGUF file of it: compiler/frontends/gguf/SyntheticGguf.h.
bool addSyntheticLlama(models::ModelWriter &w, const SyntheticOptions &opts,
                       std::string &error);

} // namespace kiln::llama

#endif // KILN_MODELS_LLAMA_SYNTHETICLLAMA_H
