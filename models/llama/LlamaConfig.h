//===- LlamaConfig.h - hyper-parameters of a Llama-family decoder ---------===//
#ifndef KILN_MODELS_LLAMA_LLAMACONFIG_H
#define KILN_MODELS_LLAMA_LLAMACONFIG_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::llama {

enum class RopePairing { Adjacent, RotateHalf };

struct LlamaConfig {
  uint32_t vocabSize = 0;
  uint32_t dim = 0;          // embedding length
  uint32_t numLayers = 0;
  uint32_t numHeads = 0;
  uint32_t numKvHeads = 0;
  uint32_t headDim = 0;      // dim / numHeads
  uint32_t ffnDim = 0;
  uint32_t contextLength = 0; // as declared by the model file
  uint32_t ropeDims = 0;     // rotated elements per head
  float ropeTheta = 10000.0f;
  float rmsEps = 1e-5f;
  RopePairing ropePairing = RopePairing::Adjacent;
  bool tiedOutput = false;   // classifier reuses the token embedding
  // Llama 3 RoPE scaling: one angle divisor per rotated pair (GGUF's rope_freqs tensor);
  // empty when the model has none.
  std::vector<float> ropeFreqFactors;

  // Name of the classifier weight (the embedding when tied).
  std::string outputWeight() const {
    return tiedOutput ? "token_embd.weight" : "output.weight";
  }
  // Checks internal consistency and sane bounds; one-line error.
  bool validate(std::string &error) const;
};

// Llama 3's rope_scaling ("rope_type": "llama3" in a Hugging Face config).
struct Llama3RopeScaling {
  float factor = 8.0f;
  float lowFreqFactor = 1.0f;
  float highFreqFactor = 4.0f;
  uint32_t originalContext = 8192;
};

// The per-pair divisors llama.cpp's converter stores as rope_freqs for that scaling:
// 1 for wavelengths under originalContext / highFreqFactor, `factor` above
// originalContext / lowFreqFactor, a smooth blend between.
std::vector<float> llama3RopeFreqFactors(float theta, uint32_t ropeDims,
                                         const Llama3RopeScaling &s);

// GGUF tensor names of layer `layer` (llama.cpp's naming).
std::string layerTensor(uint32_t layer, const char *suffix);

} // namespace kiln::llama

#endif // KILN_MODELS_LLAMA_LLAMACONFIG_H
