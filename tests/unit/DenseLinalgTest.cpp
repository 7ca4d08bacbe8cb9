// GPTQ's dense kernels (models/weights/DenseLinalg.h) against double-precision loops:
// products at shapes with every remainder (rows not a multiple of the 6-row tile, columns
// not a multiple of 16, more terms than one 256-term chunk), the Gram update, the
// Cholesky factor (L L^T gives back A; an indefinite matrix is refused) and the triangular
// inverse (L X = I). And the claim the codes rest on: the AVX-512, AVX2 and portable paths
// and any thread count give the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "models/weights/DenseLinalg.h"

namespace {

namespace la = kiln::linalg;

std::vector<float> randoms(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

// A well-conditioned symmetric positive definite matrix: X^T X / rows + I / 10.
std::vector<float> spd(size_t n, uint32_t seed) {
  const size_t rows = 2 * n;
  const std::vector<float> x = randoms(rows * n, seed);
  std::vector<float> a(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 0;
      for (size_t r = 0; r < rows; ++r)
        s += double(x[r * n + i]) * x[r * n + j];
      a[i * n + j] = float(s / double(rows) + (i == j ? 0.1 : 0.0));
    }
  return a;
}

TEST(DenseLinalg, ProductMatchesDoubleLoops) {
  struct Shape {
    size_t m, n, k;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 33, 5}, Shape{13, 16, 300}, Shape{6, 50, 600},
                  Shape{20, 3, 257}}) {
    const size_t ldc = s.n + 3, lda = s.k + 1, ldb = s.n + 5;
    const std::vector<float> a = randoms(s.m * lda, 1), b = randoms(s.k * ldb, 2);
    for (bool subtract : {false, true}) {
      std::vector<float> c = randoms(s.m * ldc, 3);
      const std::vector<float> c0 = c;
      la::addProduct(c.data(), ldc, a.data(), lda, b.data(), ldb, s.m, s.n, s.k, subtract);
      for (size_t i = 0; i < s.m; ++i) {
        for (size_t j = 0; j < s.n; ++j) {
          double p = 0;
          for (size_t q = 0; q < s.k; ++q)
            p += double(a[i * lda + q]) * b[q * ldb + j];
          const double want = c0[i * ldc + j] + (subtract ? -p : p);
          EXPECT_NEAR(c[i * ldc + j], want, 1e-4 * std::sqrt(double(s.k)) + 1e-5)
              << s.m << "x" << s.n << "x" << s.k << " at " << i << "," << j;
        }
        for (size_t j = s.n; j < ldc; ++j) // outside the product: untouched
          EXPECT_EQ(c[i * ldc + j], c0[i * ldc + j]);
      }
    }
  }
}

TEST(DenseLinalg, GramCholeskyAndInverse) {
  const size_t n = 300; // two full 128-blocks and a partial one
  const size_t rows = 70;
  const std::vector<float> x = randoms(rows * n, 4);
  std::vector<float> h(n * n, 0.0f);
  la::addGram(h.data(), n, x.data(), rows, 2);
  for (size_t i = 0; i < n; i += 7)
    for (size_t j = 0; j <= i; j += 5) {
      double s = 0;
      for (size_t r = 0; r < rows; ++r)
        s += double(x[r * n + i]) * x[r * n + j];
      EXPECT_NEAR(h[i * n + j], s, 1e-3) << i << "," << j;
    }

  const std::vector<float> a = spd(n, 5);
  std::vector<float> l = a;
  ASSERT_TRUE(la::choleskyLower(l.data(), n, 2));
  double worst = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j) {
      double s = 0;
      for (size_t q = 0; q <= j; ++q)
        s += double(l[i * n + q]) * l[j * n + q];
      worst = std::max(worst, std::fabs(s - a[i * n + j]));
    }
  EXPECT_LT(worst, 1e-4);

  std::vector<float> inv(n * n);
  la::lowerInverse(l.data(), inv.data(), n, 2);
  worst = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (j > i) {
        EXPECT_EQ(inv[i * n + j], 0.0f);
        continue;
      }
      double s = 0;
      for (size_t q = j; q <= i; ++q)
        s += double(l[i * n + q]) * inv[q * n + j];
      worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, 1e-4);
}

TEST(DenseLinalg, IndefiniteIsRefused) {
  const size_t n = 200;
  std::vector<float> a = spd(n, 6);
  a[150 * n + 150] = -1.0f; // a negative diagonal entry past the first block
  EXPECT_FALSE(la::choleskyLower(a.data(), n, 2));
  std::vector<float> nan = spd(n, 6);
  nan[3 * n + 3] = std::nanf("");
  EXPECT_FALSE(la::choleskyLower(nan.data(), n, 1));
}

// Everything GPTQ computes, on one path and thread count.
std::vector<float> everything(size_t threads) {
  const size_t n = 290, rows = 40;
  std::vector<float> h(n * n, 0.0f);
  const std::vector<float> x = randoms(rows * n, 7);
  la::addGram(h.data(), n, x.data(), rows, unsigned(threads));
  std::vector<float> l = spd(n, 8);
  EXPECT_TRUE(la::choleskyLower(l.data(), n, unsigned(threads)));
  std::vector<float> inv(n * n);
  la::lowerInverse(l.data(), inv.data(), n, unsigned(threads));
  std::vector<float> c = randoms(31 * n, 9);
  la::addProduct(c.data(), n, x.data(), n, inv.data(), n, 31, n, 40, true);
  std::vector<float> all;
  for (const std::vector<float> *v : {&h, &l, &inv, &c})
    all.insert(all.end(), v->begin(), v->end());
  return all;
}

TEST(DenseLinalg, SameBitsOnEveryPathAndThreadCount) {
  const std::vector<float> ref = everything(1);
  for (size_t threads : {2, 3}) {
    const std::vector<float> got = everything(threads);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0) << threads;
  }
  for (la::KernelPath path : {la::KernelPath::Avx2, la::KernelPath::Portable}) {
    la::capKernelPath(path);
    const std::vector<float> got = everything(2);
    la::capKernelPath(la::KernelPath::Best);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0)
        << (path == la::KernelPath::Avx2 ? "avx2" : "portable");
  }
}

} // namespace
