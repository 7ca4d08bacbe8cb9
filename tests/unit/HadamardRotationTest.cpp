// The residual rotation Q = H D / sqrt(n) (models/weights/HadamardRotation.h): orthogonal
// for powers of two and Paley orders times them
// (lengths and dot products kept), dense (a unit vector spreads to +/- 1/sqrt(n), which is
// what spreads an outlier channel), seeded, and folded correctly: a reader rotated by
// rotateRowsOf (W Q^T) on a rotated input, and a writer rotated by rotateColumnsOf (Q W),
// give the unrotated products.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "models/weights/HadamardRotation.h"

namespace {

namespace rot = kiln::rotation;

std::vector<float> randoms(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

double dot(const std::vector<float> &a, const std::vector<float> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += double(a[i]) * b[i];
  return s;
}

TEST(HadamardRotation, OrthogonalDenseAndSeeded) {
  EXPECT_TRUE(rot::isPowerOfTwo(64));
  EXPECT_FALSE(rot::isPowerOfTwo(172));
  EXPECT_FALSE(rot::isPowerOfTwo(0));
  const size_t n = 256;
  std::vector<float> a = randoms(n, 1), b = randoms(n, 2);
  const double ab = dot(a, b), aa = dot(a, a);
  rot::rotate(a.data(), n, 7);
  rot::rotate(b.data(), n, 7);
  EXPECT_NEAR(dot(a, b), ab, 1e-3 * std::sqrt(aa));
  EXPECT_NEAR(dot(a, a), aa, 1e-4 * aa);
  std::vector<float> e(n, 0.0f);
  e[3] = 1.0f;
  rot::rotate(e.data(), n, 7);
  for (float v : e)
    EXPECT_NEAR(std::fabs(v), 1.0 / 16.0, 1e-7);
  std::vector<float> c7 = randoms(n, 9), c8 = c7, again = c7;
  rot::rotate(c7.data(), n, 7);
  rot::rotate(again.data(), n, 7);
  rot::rotate(c8.data(), n, 8);
  EXPECT_EQ(c7, again); // the same seed, the same Q
  EXPECT_NE(c7, c8);    // another seed, other signs
}

// Widths that are not powers of two: Paley's H_m (x) H_p. Orthogonal means every basis
// vector goes to a unit vector of entries +/- 1/sqrt(n), the images orthogonal.
TEST(HadamardRotation, PaleyOrders) {
  EXPECT_TRUE(rot::isSupported(3072)); // Llama 3.2 3B: 12 x 256
  EXPECT_TRUE(rot::isSupported(5120)); // 20 x 256
  EXPECT_TRUE(rot::isSupported(96));
  EXPECT_FALSE(rot::isSupported(36));
  EXPECT_FALSE(rot::isSupported(172)); // stories260K's FFN: 4 x 43
  for (size_t n : {12u, 20u, 96u, 80u, 176u}) {
    ASSERT_TRUE(rot::isSupported(n)) << n;
    std::vector<std::vector<float>> img(n, std::vector<float>(n, 0.0f));
    for (size_t i = 0; i < n; ++i) {
      img[i][i] = 1.0f;
      rot::rotate(img[i].data(), n, 3);
      for (float v : img[i])
        ASSERT_NEAR(std::fabs(v), 1.0 / std::sqrt(double(n)), 1e-6) << n;
    }
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        ASSERT_NEAR(dot(img[i], img[j]), i == j ? 1.0 : 0.0, 1e-5) << n << ": " << i << "," << j;
  }
}

TEST(HadamardRotation, FoldedWeightsGiveTheSameProducts) {
  const size_t d = 64, out = 5;
  const std::vector<float> x = randoms(d, 3), w = randoms(out * d, 4);
  std::vector<float> rx = x, rw = w;
  rot::rotate(rx.data(), d, 11);             // the rotated stream Q x
  rot::rotateRowsOf(rw.data(), out, d, 11); // the reader W Q^T
  for (size_t o = 0; o < out; ++o) {
    double plain = 0, rotated = 0;
    for (size_t i = 0; i < d; ++i)
      plain += double(w[o * d + i]) * x[i], rotated += double(rw[o * d + i]) * rx[i];
    EXPECT_NEAR(rotated, plain, 1e-4) << o;
  }
  // a writer W (d x in): Q (W h) == (Q W) h
  const size_t in = 3;
  const std::vector<float> h = randoms(in, 5), wo = randoms(d * in, 6);
  std::vector<float> y(d), qw = wo;
  for (size_t r = 0; r < d; ++r)
    for (size_t c = 0; c < in; ++c)
      y[r] += wo[r * in + c] * h[c];
  rot::rotate(y.data(), d, 11);
  rot::rotateColumnsOf(qw.data(), d, in, 11);
  for (size_t r = 0; r < d; ++r) {
    double v = 0;
    for (size_t c = 0; c < in; ++c)
      v += double(qw[r * in + c]) * h[c];
    EXPECT_NEAR(v, y[r], 1e-4) << r;
  }
}

} // namespace
