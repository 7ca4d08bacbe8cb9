#include "models/llama/LlamaConfig.h"

#include <cmath>

namespace kiln::llama {

namespace {
// Bounds well beyond any Llama released so far; they exist to turn absurd metadata into
// an error before it becomes an absurd allocation.
constexpr uint32_t kMaxDim = 1u << 16;
constexpr uint32_t kMaxLayers = 1024;
constexpr uint32_t kMaxVocab = 1u << 22;
constexpr uint32_t kMaxHeads = 1024;
} // namespace

bool LlamaConfig::validate(std::string &error) const {
  auto fail = [&](const std::string &msg) {
    error = msg;
    return false;
  };
  if (dim == 0 || dim > kMaxDim)
    return fail("embedding length " + std::to_string(dim) + " is out of range [1, 65536]");
  if (numLayers == 0 || numLayers > kMaxLayers)
    return fail("block count " + std::to_string(numLayers) + " is out of range [1, 1024]");
  if (vocabSize == 0 || vocabSize > kMaxVocab)
    return fail("vocabulary size " + std::to_string(vocabSize) + " is out of range");
  if (ffnDim == 0 || ffnDim > 16 * kMaxDim)
    return fail("feed-forward length " + std::to_string(ffnDim) + " is out of range");
  if (numHeads == 0 || numHeads > kMaxHeads || dim % numHeads != 0)
    return fail("head count " + std::to_string(numHeads) +
                " must be positive and divide the embedding length " + std::to_string(dim));
  if (numKvHeads == 0 || numHeads % numKvHeads != 0)
    return fail("KV head count " + std::to_string(numKvHeads) +
                " must be positive and divide the head count " + std::to_string(numHeads));
  if (headDim != dim / numHeads)
    return fail("head dimension " + std::to_string(headDim) + " != embedding / heads");
  if (ropeDims == 0 || ropeDims > headDim || ropeDims % 2 != 0)
    return fail("rope dimension count " + std::to_string(ropeDims) +
                " must be even and at most the head dimension " + std::to_string(headDim));
  if (!(ropeTheta > 0.0f))
    return fail("rope frequency base must be positive");
  if (!(rmsEps > 0.0f) || rmsEps > 1.0f)
    return fail("RMS norm epsilon must be in (0, 1]");
  if (contextLength == 0)
    return fail("context length must be positive");
  if (!ropeFreqFactors.empty() && ropeFreqFactors.size() != ropeDims / 2)
    return fail("rope_freqs has " + std::to_string(ropeFreqFactors.size()) +
                " values for " + std::to_string(ropeDims / 2) + " rotated pairs");
  for (float f : ropeFreqFactors)
    if (!(f > 0.0f) || !std::isfinite(f))
      return fail("rope_freqs values must be finite and positive, got " + std::to_string(f));
  return true;
}

std::vector<float> llama3RopeFreqFactors(float theta, uint32_t ropeDims,
                                         const Llama3RopeScaling &s) {
  const double lowWavelen = double(s.originalContext) / s.lowFreqFactor;
  const double highWavelen = double(s.originalContext) / s.highFreqFactor;
  std::vector<float> factors;
  for (uint32_t i = 0; i < ropeDims; i += 2) {
    const double freq = 1.0 / std::pow(double(theta), double(i) / double(ropeDims));
    const double wavelen = 2.0 * M_PI / freq;
    if (wavelen < highWavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > lowWavelen) {
      factors.push_back(s.factor);
    } else {
      const double smooth = (s.originalContext / wavelen - s.lowFreqFactor) /
                            (s.highFreqFactor - s.lowFreqFactor);
      factors.push_back(float(1.0 / ((1.0 - smooth) / s.factor + smooth)));
    }
  }
  return factors;
}

std::string layerTensor(uint32_t layer, const char *suffix) {
  return "blk." + std::to_string(layer) + "." + suffix;
}

} // namespace kiln::llama
