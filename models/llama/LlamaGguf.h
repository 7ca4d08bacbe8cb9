//===- LlamaGguf.h - GGUF key map for the llama architecture --------------===//
//
// Reads the llama.* metadata (llama.cpp's GGUF key names) of a model source into a
// LlamaConfig and checks that every tensor the architecture needs is present with the
// shape the metadata implies and a format kiln decodes; writes the same keys back from a
// config for a frontend that raised one (ONNX). No LLVM/MLIR dependency (the sanitizer
// corpus test builds it).
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_LLAMA_LLAMAGGUF_H
#define KILN_MODELS_LLAMA_LLAMAGGUF_H

#include <string>

#include "models/ModelSource.h"
#include "models/llama/LlamaConfig.h"

namespace kiln::llama {

// kiln's own key: "adjacent" (llama.cpp's permuted q/k rows; the default) or "rotate_half"
// (weights as Hugging Face stores them).
constexpr const char *kRopePairingKey = "kiln.rope_pairing";
// Llama 3 RoPE scaling's per-pair divisors, as llama.cpp's converter names the tensor.
constexpr const char *kRopeFreqsTensor = "rope_freqs.weight";

// On failure returns false and sets `error` to one line naming the key or tensor.
bool configFromSource(const models::ModelSource &source, LlamaConfig &out, std::string &error);

// The metadata configFromSource reads back as `c` (tied output and tensor shapes come from
// the weights).
models::Metadata metadataFromConfig(const LlamaConfig &c);

} // namespace kiln::llama

#endif // KILN_MODELS_LLAMA_LLAMAGGUF_H
