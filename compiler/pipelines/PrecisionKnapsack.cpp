#include "compiler/pipelines/PrecisionKnapsack.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::pipelines {

uint64_t knapsackUnit(uint64_t budget, uint64_t cells) {
  return std::max<uint64_t>(1, (budget + cells - 1) / cells);
}

bool solveKnapsack(const std::vector<KnapsackItem> &items, uint64_t budget, uint64_t unit,
                   std::vector<size_t> &choice, std::string &error) {
  if (unit == 0)
    unit = 1;
  uint64_t minBytes = 0, minUnits = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const KnapsackItem &it = items[i];
    if (it.bytes.empty() || it.bytes.size() != it.loss.size()) {
      error = "precision search: tensor " + std::to_string(i) + " has no candidate formats";
      return false;
    }
    minBytes += *std::min_element(it.bytes.begin(), it.bytes.end());
    uint64_t u = UINT64_MAX;
    for (uint64_t b : it.bytes)
      u = std::min(u, (b + unit - 1) / unit);
    minUnits += u;
  }
  if (minBytes > budget) {
    error = "the budget of " + std::to_string(budget) + " weight bytes is below the smallest "
            "possible model (" + std::to_string(minBytes) + " bytes, every tensor in its "
            "smallest format)";
    return false;
  }
  const uint64_t cap = budget / unit;
  if (minUnits > cap) {
    error = "the budget of " + std::to_string(budget) + " bytes is within rounding (" +
            std::to_string(unit) + "-byte units) of the smallest possible model (" +
            std::to_string(minBytes) + " bytes); raise it slightly";
    return false;
  }
  // best[c]: least loss of the items so far using at most c units; pick[i][c] the option.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(cap + 1, 0.0), next(cap + 1);
  std::vector<std::vector<uint8_t>> pick(items.size(), std::vector<uint8_t>(cap + 1, 0));
  for (size_t i = 0; i < items.size(); ++i) {
    const KnapsackItem &it = items[i];
    std::fill(next.begin(), next.end(), inf);
    for (size_t o = 0; o < it.bytes.size(); ++o) {
      const uint64_t w = (it.bytes[o] + unit - 1) / unit;
      for (uint64_t c = w; c <= cap; ++c) {
        double v = best[c - w] + it.loss[o];
        if (v < next[c]) {
          next[c] = v;
          pick[i][c] = uint8_t(o);
        }
      }
    }
    best.swap(next);
  }
  if (!std::isfinite(best[cap])) {
    error = "precision search: no choice fits the budget";
    return false;
  }
  choice.assign(items.size(), 0);
  uint64_t c = cap;
  for (size_t i = items.size(); i-- > 0;) {
    size_t o = pick[i][c];
    choice[i] = o;
    c -= (items[i].bytes[o] + unit - 1) / unit;
  }
  return true;
}

} // namespace kiln::pipelines
