//===- Sampler.h - next-token selection from logits -----------------------===//
#ifndef KILN_COMPILER_EVAL_SAMPLER_H
#define KILN_COMPILER_EVAL_SAMPLER_H

#include <cstdint>
#include <random>

namespace kiln {

struct SamplerOptions {
  float temperature = 0.0f; // 0: greedy (argmax, lowest id on ties)
  int32_t topK = 0;         // 0: all tokens
  float topP = 1.0f;        // nucleus mass in (0, 1]
  uint64_t seed = 0;
};

class Sampler {
public:
  explicit Sampler(const SamplerOptions &opts) : opts_(opts), rng_(opts.seed) {}
  int32_t sample(const float *logits, int32_t vocab);

private:
  SamplerOptions opts_;
  std::mt19937_64 rng_;
};

// Index of the largest logit (lowest index on ties).
int32_t argmax(const float *logits, int32_t n);

} // namespace kiln

#endif // KILN_COMPILER_EVAL_SAMPLER_H
