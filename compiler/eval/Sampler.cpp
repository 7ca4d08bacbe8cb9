#include "compiler/eval/Sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace kiln {

int32_t argmax(const float *logits, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (logits[i] > logits[best])
      best = i;
  return best;
}

int32_t Sampler::sample(const float *logits, int32_t vocab) {
  if (opts_.temperature <= 0.0f)
    return argmax(logits, vocab);
  // Candidates sorted by logit, cut to top-k, softmax at the temperature, cut to top-p.
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (opts_.topK > 0 && opts_.topK < vocab)
    ids.resize(size_t(opts_.topK));
  std::vector<double> p(ids.size());
  const double top = logits[ids[0]];
  double sum = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    sum += p[i] = std::exp((logits[ids[i]] - top) / opts_.temperature);
  size_t keep = ids.size();
  double mass = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    p[i] /= sum;
    mass += p[i];
    if (mass >= opts_.topP) {
      keep = i + 1;
      break;
    }
  }
  std::discrete_distribution<size_t> pick(p.begin(), p.begin() + long(keep));
  return ids[pick(rng_)];
}

} // namespace kiln
