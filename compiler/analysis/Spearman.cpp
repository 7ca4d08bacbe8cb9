#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "compiler/analysis/Importance.h"

namespace kiln::analysis {

namespace {

// 1-based ranks, ascending; tied values get the mean of the ranks they span.
std::vector<double> averageRanks(const std::vector<double> &v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
      ++j;
    const double mean = (double(i) + double(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k)
      rank[order[k]] = mean;
    i = j + 1;
  }
  return rank;
}

} // namespace

double spearman(const std::vector<double> &a, const std::vector<double> &b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() != b.size() || a.size() < 2)
    return nan;
  // Pearson correlation of the average ranks (exact with ties, unlike 1 - 6 sum d^2 / ...).
  std::vector<double> ra = averageRanks(a), rb = averageRanks(b);
  const double n = double(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0)
    return nan;
  return sab / std::sqrt(saa * sbb);
}

std::vector<int32_t> ranksDescending(const std::vector<double> &values) {
  std::vector<int32_t> rank(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    int32_t larger = 0;
    for (double w : values)
      larger += w > values[i];
    rank[i] = larger + 1;
  }
  return rank;
}

} // namespace kiln::analysis
