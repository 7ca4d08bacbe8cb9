#include "models/weights/DenseLinalg.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "models/weights/ParallelFor.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_LINALG_X86 1
#endif

// This file is compiled with -ffp-contract=off (models/CMakeLists.txt): a multiply-add
// contracted on one path and not on another would change the bits. The products' fused
// multiply-adds are written out (std::fma, _mm*_fmadd_ps).

namespace kiln::linalg {

namespace {

constexpr size_t kTileRows = 6, kTileCols = 16;
// Terms summed before they are added to C: bounds the packed panel of B (16 KB) and fixes
// the summation order independently of the caller's k.
constexpr size_t kChunk = 256;
constexpr size_t kRowBlock = 96; // rows of A whose chunk of terms stays in L1 (96 KB)
constexpr size_t kBlock = 128;    // the factorisations' panel width

// One tile of R rows x 16 columns of C from kc terms; bp is the packed panel of B (kc rows
// of bstride, the tile's 16 at its start). Each element: s = 0, s = fma(a_p, b_p, s) in p
// order, then c +/-= s. The explicit kernels below compute exactly this.
template <size_t R>
inline void tileBody(float *c, size_t ldc, const float *a, size_t lda, const float *bp,
                     size_t bstride, size_t kc, bool subtract) {
  float s[R][kTileCols] = {};
  for (size_t p = 0; p < kc; ++p)
    for (size_t r = 0; r < R; ++r) {
      const float av = a[r * lda + p];
      for (size_t j = 0; j < kTileCols; ++j)
        s[r][j] = std::fma(av, bp[p * bstride + j], s[r][j]);
    }
  for (size_t r = 0; r < R; ++r)
    for (size_t j = 0; j < kTileCols; ++j)
      c[r * ldc + j] = subtract ? c[r * ldc + j] - s[r][j] : c[r * ldc + j] + s[r][j];
}

using TileFn = void (*)(float *, size_t, const float *, size_t, const float *, size_t, size_t,
                        bool);

template <size_t R>
void tilePortable(float *c, size_t ldc, const float *a, size_t lda, const float *bp,
                  size_t bstride, size_t kc, bool subtract) {
  tileBody<R>(c, ldc, a, lda, bp, bstride, kc, subtract);
}

#ifdef KILN_LINALG_X86
// The same body where the compiler may use the FMA instruction (std::fma is a library call
// on the x86-64 baseline): short tiles on CPUs with AVX2.
template <size_t R>
__attribute__((target("avx2,fma"))) void tileFma(float *c, size_t ldc, const float *a,
                                                  size_t lda, const float *bp, size_t bstride,
                                                  size_t kc, bool subtract) {
  tileBody<R>(c, ldc, a, lda, bp, bstride, kc, subtract);
}

// 6 rows x 16 columns in named registers (GCC spills an array of accumulators every term).
__attribute__((target("avx2,fma"))) void tile6Avx2(float *c, size_t ldc, const float *a,
                                                   size_t lda, const float *bp, size_t bstride,
                                                   size_t kc, bool subtract) {
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00;
  __m256 s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
  const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda,
              *a5 = a + 5 * lda;
  for (size_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp + p * bstride);
    const __m256 b1 = _mm256_loadu_ps(bp + p * bstride + 8);
    __m256 av = _mm256_broadcast_ss(a0 + p);
    s00 = _mm256_fmadd_ps(av, b0, s00), s01 = _mm256_fmadd_ps(av, b1, s01);
    av = _mm256_broadcast_ss(a1 + p);
    s10 = _mm256_fmadd_ps(av, b0, s10), s11 = _mm256_fmadd_ps(av, b1, s11);
    av = _mm256_broadcast_ss(a2 + p);
    s20 = _mm256_fmadd_ps(av, b0, s20), s21 = _mm256_fmadd_ps(av, b1, s21);
    av = _mm256_broadcast_ss(a3 + p);
    s30 = _mm256_fmadd_ps(av, b0, s30), s31 = _mm256_fmadd_ps(av, b1, s31);
    av = _mm256_broadcast_ss(a4 + p);
    s40 = _mm256_fmadd_ps(av, b0, s40), s41 = _mm256_fmadd_ps(av, b1, s41);
    av = _mm256_broadcast_ss(a5 + p);
    s50 = _mm256_fmadd_ps(av, b0, s50), s51 = _mm256_fmadd_ps(av, b1, s51);
  }
  const __m256 sums[kTileRows][2] = {{s00, s01}, {s10, s11}, {s20, s21},
                                     {s30, s31}, {s40, s41}, {s50, s51}};
  for (size_t r = 0; r < kTileRows; ++r) {
    float *cr = c + r * ldc;
    const __m256 c0 = _mm256_loadu_ps(cr), c1 = _mm256_loadu_ps(cr + 8);
    _mm256_storeu_ps(cr, subtract ? _mm256_sub_ps(c0, sums[r][0]) : _mm256_add_ps(c0, sums[r][0]));
    _mm256_storeu_ps(cr + 8,
                     subtract ? _mm256_sub_ps(c1, sums[r][1]) : _mm256_add_ps(c1, sums[r][1]));
  }
}

// 6 rows x 32 columns (two 16-column tiles side by side), one zmm per row and half.
__attribute__((target("avx512f"))) void tile6x32Avx512(float *c, size_t ldc, const float *a,
                                                      size_t lda, const float *bp, size_t kc,
                                                      bool subtract) {
  __m512 s00 = _mm512_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00;
  __m512 s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
  const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda,
              *a5 = a + 5 * lda;
  for (size_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(bp + p * 2 * kTileCols);
    const __m512 b1 = _mm512_loadu_ps(bp + p * 2 * kTileCols + kTileCols);
    __m512 av = _mm512_set1_ps(a0[p]);
    s00 = _mm512_fmadd_ps(av, b0, s00), s01 = _mm512_fmadd_ps(av, b1, s01);
    av = _mm512_set1_ps(a1[p]);
    s10 = _mm512_fmadd_ps(av, b0, s10), s11 = _mm512_fmadd_ps(av, b1, s11);
    av = _mm512_set1_ps(a2[p]);
    s20 = _mm512_fmadd_ps(av, b0, s20), s21 = _mm512_fmadd_ps(av, b1, s21);
    av = _mm512_set1_ps(a3[p]);
    s30 = _mm512_fmadd_ps(av, b0, s30), s31 = _mm512_fmadd_ps(av, b1, s31);
    av = _mm512_set1_ps(a4[p]);
    s40 = _mm512_fmadd_ps(av, b0, s40), s41 = _mm512_fmadd_ps(av, b1, s41);
    av = _mm512_set1_ps(a5[p]);
    s50 = _mm512_fmadd_ps(av, b0, s50), s51 = _mm512_fmadd_ps(av, b1, s51);
  }
  const __m512 sums[kTileRows][2] = {{s00, s01}, {s10, s11}, {s20, s21},
                                     {s30, s31}, {s40, s41}, {s50, s51}};
  for (size_t r = 0; r < kTileRows; ++r)
    for (size_t h = 0; h < 2; ++h) {
      float *cr = c + r * ldc + h * kTileCols;
      const __m512 cv = _mm512_loadu_ps(cr);
      _mm512_storeu_ps(cr, subtract ? _mm512_sub_ps(cv, sums[r][h]) : _mm512_add_ps(cv, sums[r][h]));
    }
}
#endif

std::atomic<KernelPath> pathCap{KernelPath::Best};

enum class Isa { Portable, Avx2, Avx512 };

Isa isa() {
#ifdef KILN_LINALG_X86
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f");
  const KernelPath cap = pathCap.load(std::memory_order_relaxed);
  if (avx512 && cap == KernelPath::Best)
    return Isa::Avx512;
  if (avx2 && cap != KernelPath::Portable)
    return Isa::Avx2;
#endif
  return Isa::Portable;
}

TileFn shortTile(Isa path, size_t rows) {
  static const TileFn portable[kTileRows] = {tilePortable<1>, tilePortable<2>, tilePortable<3>,
                                             tilePortable<4>, tilePortable<5>, tilePortable<6>};
#ifdef KILN_LINALG_X86
  static const TileFn fma[kTileRows] = {tileFma<1>, tileFma<2>, tileFma<3>,
                                        tileFma<4>, tileFma<5>, tileFma<6>};
  if (path != Isa::Portable)
    return rows == kTileRows ? tile6Avx2 : fma[rows - 1];
#endif
  return portable[rows - 1];
}

std::vector<float> transposed(const float *x, size_t ld, size_t rows, size_t cols) {
  std::vector<float> t(rows * cols);
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < cols; ++j)
      t[j * rows + r] = x[r * ld + j];
  return t;
}

// The inverse of one lower triangular block (w x w, stride ld) into x (stride ldx), by
// forward substitution a row at a time.
void invertDiagonalBlock(const float *l, size_t ld, float *x, size_t ldx, size_t w) {
  for (size_t i = 0; i < w; ++i) {
    float *xi = x + i * ldx;
    std::fill(xi, xi + w, 0.0f);
    xi[i] = 1.0f;
    for (size_t p = 0; p < i; ++p) {
      const float lip = l[i * ld + p];
      const float *xp = x + p * ldx;
      for (size_t j = 0; j <= p; ++j)
        xi[j] -= lip * xp[j];
    }
    const float d = l[i * ld + i];
    for (size_t j = 0; j <= i; ++j)
      xi[j] /= d;
  }
}

} // namespace

void capKernelPath(KernelPath path) { pathCap = path; }

void addProduct(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
                size_t m, size_t n, size_t k, bool subtract) {
  if (m == 0 || n == 0 || k == 0)
    return;
  const Isa path = isa();
  // panels of 32 columns, then one of 16; the columns after them one at a time
  const size_t panelCols = n / (2 * kTileCols) * (2 * kTileCols);
  const size_t vectorCols = n / kTileCols * kTileCols;
  std::vector<float> panel(std::min(k, kChunk) * 2 * kTileCols);
  for (size_t p0 = 0; p0 < k; p0 += kChunk) {
    const size_t kc = std::min(kChunk, k - p0);
    // blocks of rows whose terms stay in L1 while the panels pass
    for (size_t ib = 0; ib < m; ib += kRowBlock) {
      const size_t ie = std::min(m, ib + kRowBlock);
      for (size_t j0 = 0; j0 < vectorCols;) {
        const size_t width = j0 < panelCols ? 2 * kTileCols : kTileCols;
        for (size_t p = 0; p < kc; ++p)
          std::copy(b + (p0 + p) * ldb + j0, b + (p0 + p) * ldb + j0 + width,
                    panel.begin() + long(p * width));
        for (size_t i0 = ib; i0 < ie; i0 += kTileRows) {
          const size_t rows = std::min(kTileRows, ie - i0);
          float *ct = c + i0 * ldc + j0;
          const float *at = a + i0 * lda + p0;
#ifdef KILN_LINALG_X86
          if (path == Isa::Avx512 && rows == kTileRows && width == 2 * kTileCols) {
            tile6x32Avx512(ct, ldc, at, lda, panel.data(), kc, subtract);
            continue;
          }
#endif
          for (size_t h = 0; h < width; h += kTileCols)
            shortTile(path, rows)(ct + h, ldc, at, lda, panel.data() + h, width, kc, subtract);
        }
        j0 += width;
      }
    }
    for (size_t i = 0; i < m; ++i)
      for (size_t j = vectorCols; j < n; ++j) {
        float s = 0;
        for (size_t p = 0; p < kc; ++p)
          s = std::fma(a[i * lda + p0 + p], b[(p0 + p) * ldb + j], s);
        c[i * ldc + j] = subtract ? c[i * ldc + j] - s : c[i * ldc + j] + s;
      }
  }
}

#ifdef KILN_LINALG_X86
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void subtractScaled(float *y, const float *x, float a, size_t n) {
  for (size_t i = 0; i < n; ++i)
    y[i] -= a * x[i];
}

void addGram(float *h, size_t n, const float *x, size_t rows, unsigned threads) {
  if (n == 0 || rows == 0)
    return;
  const std::vector<float> xt = transposed(x, n, rows, n);
  // rows [i0, i1) of H, columns [0, i1): the lower triangle and the upper part of the
  // diagonal block
  parallelFor((n + kBlock - 1) / kBlock, threads, [&](size_t blk) {
    const size_t i0 = blk * kBlock, i1 = std::min(n, i0 + kBlock);
    addProduct(h + i0 * n, n, xt.data() + i0 * rows, rows, x, n, i1 - i0, i1, rows, false);
  });
}

bool choleskyLower(float *a, size_t n, unsigned threads) {
  for (size_t k0 = 0; k0 < n; k0 += kBlock) {
    const size_t k1 = std::min(n, k0 + kBlock), w = k1 - k0;
    // the diagonal block (earlier panels already subtracted), column by column
    for (size_t j = k0; j < k1; ++j) {
      float s = a[j * n + j];
      for (size_t p = k0; p < j; ++p)
        s -= a[j * n + p] * a[j * n + p];
      if (!(s > 0))
        return false;
      const float d = std::sqrt(s);
      a[j * n + j] = d;
      for (size_t i = j + 1; i < k1; ++i) {
        float t = a[i * n + j];
        for (size_t p = k0; p < j; ++p)
          t -= a[i * n + p] * a[j * n + p];
        a[i * n + j] = t / d;
      }
    }
    if (k1 == n)
      break;
    // the panel below: row i's L_i = A_i L11^-T, substituted left to right; lt holds the
    // block's columns as rows so each step is a contiguous axpy
    const std::vector<float> lt = transposed(a + k0 * n + k0, n, w, w);
    parallelFor((n - k1 + kBlock - 1) / kBlock, threads, [&](size_t blk) {
      const size_t r0 = k1 + blk * kBlock, r1 = std::min(n, r0 + kBlock);
      for (size_t i = r0; i < r1; ++i) {
        float *ai = a + i * n + k0;
        for (size_t j = 0; j < w; ++j) {
          const float x = ai[j] / lt[j * w + j];
          ai[j] = x;
          for (size_t q = j + 1; q < w; ++q)
            ai[q] -= x * lt[j * w + q];
        }
      }
    });
    // the trailing lower triangle: A22 -= L21 L21^T, a block of rows at a time
    const std::vector<float> pt = transposed(a + k1 * n + k0, n, n - k1, w);
    parallelFor((n - k1 + kBlock - 1) / kBlock, threads, [&](size_t blk) {
      const size_t r0 = k1 + blk * kBlock, r1 = std::min(n, r0 + kBlock);
      addProduct(a + r0 * n + k1, n, a + r0 * n + k0, n, pt.data(), n - k1, r1 - r0, r1 - k1,
                 w, true);
    });
  }
  return true;
}

void lowerInverse(const float *l, float *x, size_t n, unsigned threads) {
  std::fill(x, x + n * n, 0.0f);
  const size_t nb = (n + kBlock - 1) / kBlock;
  parallelFor(nb, threads, [&](size_t b) {
    const size_t c0 = b * kBlock, w = std::min(kBlock, n - c0);
    invertDiagonalBlock(l + c0 * n + c0, n, x + c0 * n + c0, n, w);
  });
  // block column k: X_ik = -X_ii (L_i,k..i-1 X_k..i-1,k) down the column; columns are
  // independent
  parallelFor(nb, threads, [&](size_t k) {
    const size_t c0 = k * kBlock, cw = std::min(kBlock, n - c0);
    std::vector<float> t(kBlock * cw);
    for (size_t i = k + 1; i < nb; ++i) {
      const size_t r0 = i * kBlock, rw = std::min(kBlock, n - r0);
      std::fill(t.begin(), t.end(), 0.0f);
      addProduct(t.data(), cw, l + r0 * n + c0, n, x + c0 * n + c0, n, rw, cw, r0 - c0, true);
      addProduct(x + r0 * n + c0, n, x + r0 * n + r0, n, t.data(), cw, rw, cw, rw, false);
    }
  });
}

} // namespace kiln::linalg
