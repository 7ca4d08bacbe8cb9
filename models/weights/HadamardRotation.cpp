#include "models/weights/HadamardRotation.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/weights/ParallelFor.h"

namespace kiln::rotation {

namespace {

// D's sign for index i: the top bit of splitmix64(seed + i), so a sign does not depend on n.
float signOf(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (z >> 63) ? -1.0f : 1.0f;
}

bool isPrime(uint64_t q) {
  if (q < 2)
    return false;
  for (uint64_t d = 2; d * d <= q; ++d)
    if (q % d == 0)
      return false;
  return true;
}

// The order m of the Paley block of a width n = m * 2^k: 1 when n is a power of two, else
// the smallest m = q + 1 (q a prime, q = 3 mod 4) with the same odd part as n; 0 if none.
uint64_t paleyOrder(uint64_t n) {
  if (n == 0)
    return 0;
  if (isPowerOfTwo(n))
    return 1;
  uint64_t odd = n;
  while (odd % 2 == 0)
    odd /= 2;
  for (uint64_t m = 2 * odd; m <= n; m *= 2)
    if (isPrime(m - 1) && (m - 1) % 4 == 3)
      return m;
  return 0;
}

// Paley's construction I: for a prime q = 3 (mod 4), H = I + S with S = [[0, 1^T],
// [-1, J]], J the Jacobsthal matrix J_ij = chi(j - i) (chi the quadratic character mod q),
// is a Hadamard matrix of order q + 1. Row-major, +/-1.
std::vector<float> paleyMatrix(uint64_t m) {
  const uint64_t q = m - 1;
  std::vector<int> chi(q, -1);
  chi[0] = 0;
  for (uint64_t x = 1; x < q; ++x)
    chi[(x * x) % q] = 1;
  std::vector<float> h(m * m, 0.0f);
  for (uint64_t i = 0; i < m; ++i)
    for (uint64_t j = 0; j < m; ++j) {
      float s;
      if (i == 0)
        s = j == 0 ? 0.0f : 1.0f;
      else if (j == 0)
        s = -1.0f;
      else
        s = float(chi[(j + q - i) % q]);
      h[i * m + j] = s + (i == j ? 1.0f : 0.0f);
    }
  return h;
}

} // namespace

bool isPowerOfTwo(uint64_t n) { return n && !(n & (n - 1)); }

bool isSupported(uint64_t n) { return paleyOrder(n) != 0; }

void rotate(float *x, size_t n, uint64_t seed) {
  const uint64_t m = paleyOrder(n), p = n / m; // x as m rows of p (a power of two)
  // in double: the transform's sums, then one rounding to float
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = double(signOf(seed, i)) * x[i];
  for (uint64_t r = 0; r < m; ++r) {
    double *row = v.data() + r * p;
    for (size_t h = 1; h < p; h *= 2)
      for (size_t i = 0; i < p; i += 2 * h)
        for (size_t j = i; j < i + h; ++j) {
          const double a = row[j], b = row[j + h];
          row[j] = a + b, row[j + h] = a - b;
        }
  }
  if (m > 1) { // H_m on the columns: (H_m (x) H_p) x
    static thread_local std::vector<float> hm;
    static thread_local uint64_t order = 0;
    if (order != m)
      hm = paleyMatrix(m), order = m;
    std::vector<double> col(m);
    for (uint64_t c = 0; c < p; ++c) {
      for (uint64_t a = 0; a < m; ++a) {
        double s = 0;
        for (uint64_t b = 0; b < m; ++b)
          s += hm[a * m + b] * v[b * p + c];
        col[a] = s;
      }
      for (uint64_t a = 0; a < m; ++a)
        v[a * p + c] = col[a];
    }
  }
  const double scale = 1.0 / std::sqrt(double(n));
  for (size_t i = 0; i < n; ++i)
    x[i] = float(v[i] * scale);
}

void rotateRowsOf(float *w, size_t rows, size_t cols, uint64_t seed) {
  parallelFor(rows, coreCount(), [&](size_t r) { rotate(w + r * cols, cols, seed); });
}

void rotateColumnsOf(float *w, size_t rows, size_t cols, uint64_t seed) {
  // 16 columns at a time, so each row's read is one cache line
  constexpr size_t kCols = 16;
  parallelFor((cols + kCols - 1) / kCols, coreCount(), [&](size_t g) {
    const size_t c0 = g * kCols, nc = std::min(kCols, cols - c0);
    std::vector<float> block(nc * rows);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < nc; ++c)
        block[c * rows + r] = w[r * cols + c0 + c];
    for (size_t c = 0; c < nc; ++c)
      rotate(block.data() + c * rows, rows, seed);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < nc; ++c)
        w[r * cols + c0 + c] = block[c * rows + r];
  });
}

} // namespace kiln::rotation
