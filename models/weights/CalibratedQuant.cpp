#include "models/weights/CalibratedQuant.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "models/weights/DenseLinalg.h"
#include "models/weights/ParallelFor.h"

namespace kiln::quant {

namespace {

constexpr int kBlock = 32;
constexpr int kSteps = 8; // scale candidates per side of the plain rule

// A block's grid: value(k) = d * k + m for integer codes k in [kmin, kmax] (the stored
// code is k - kmin for the offset formats). d and m are fp16-exact; id = 1 / d (0 for d 0).
struct Grid {
  float d = 0, m = 0, id = 0;
  Grid() = default;
  Grid(float d_, float m_) : d(d_), m(m_), id(d_ != 0.0f ? 1.0f / d_ : 0.0f) {}
};

struct Format {
  int kmin, kmax;
  bool hasMin; // q4_1: a searched minimum m; else m = 0
};

bool formatOf(uint32_t format, Format &f) {
  switch (format) {
  case KILN_GGML_TYPE_Q8_0: // not -128: integer kernels take |q| with sign tricks
    f = {-127, 127, false};
    return true;
  case KILN_GGML_TYPE_Q4_0:
    f = {-8, 7, false};
    return true;
  case KILN_GGML_TYPE_Q4_1:
    f = {0, 15, true};
    return true;
  case KILN_TYPE_Q3_0:
    f = {-4, 3, false};
    return true;
  default:
    return false;
  }
}

float half(float v) { return kiln_fp16_to_fp32(kiln_fp32_to_fp16(v)); }

// The code nearest to x on grid g (ties to even, by adding and removing 1.5 * 2^23; the
// search and the encoding share it), as a float. Plain arithmetic so the block loops
// vectorise: the scale search is most of the time of weighted rounding.
[[gnu::always_inline]] inline float codeOf(const Format &f, const Grid &g, float x) {
  const float t = std::min(std::max((x - g.m) * g.id, float(f.kmin)), float(f.kmax));
  return (t + 12582912.0f) - 12582912.0f;
}

[[gnu::always_inline]] inline float valueOf(const Grid &g, float k) { return k * g.d + g.m; }

// Sums over a block keep 8 partial sums, lane l taking elements l, l + 8, ...: every
// lane is a plain sequential sum, so the loops vectorise (4 or 8 lanes wide) without
// reordering a float addition, and every build gives the same bits.
inline float sum8(const float *p) {
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

// sum_j wt_j (x_j - value(code(x_j)))^2
[[gnu::always_inline]] inline float errorOf(const Format &f, const Grid &g, const float *x,
                                            const float *wt) {
  float e[8] = {};
  for (int j0 = 0; j0 < kBlock; j0 += 8)
    for (int l = 0; l < 8; ++l) {
      const float r = x[j0 + l] - valueOf(g, codeOf(f, g, x[j0 + l]));
      e[l] += wt[j0 + l] * r * r;
    }
  return sum8(e);
}

// Weighted least-squares d (and m) for the codes grid g gives x: the refit of
// llama.cpp's make_qx_quants / make_qkx2_quants, under importance wt. With `err`, also
// errorOf(g) from the same pass over the block.
[[gnu::always_inline]] inline Grid refit(const Format &f, const Grid &g, const float *x,
                                         const float *wt, float *err = nullptr) {
  float sw[8] = {}, sk[8] = {}, skk[8] = {}, sx[8] = {}, skx[8] = {}, e[8] = {};
  for (int j0 = 0; j0 < kBlock; j0 += 8)
    for (int l = 0; l < 8; ++l) {
      const float k = codeOf(f, g, x[j0 + l]), w = wt[j0 + l], wk = w * k;
      const float r = x[j0 + l] - valueOf(g, k);
      e[l] += w * r * r;
      sw[l] += w, sk[l] += wk, skk[l] += wk * k, sx[l] += w * x[j0 + l], skx[l] += wk * x[j0 + l];
    }
  if (err)
    *err = sum8(e);
  const double W = sum8(sw), K = sum8(sk), KK = sum8(skk), X = sum8(sx), KX = sum8(skx);
  if (!f.hasMin)
    return Grid(KK > 0 ? half(float(KX / KK)) : 0.0f, 0.0f);
  const double det = W * KK - K * K;
  if (det <= 0)
    return g;
  return Grid(half(float((W * KX - K * X) / det)), half(float((KK * X - K * KX) / det)));
}

// Keeps g or its refit where either has less weighted error than `best`.
[[gnu::always_inline]] inline void tryGridAndRefit(const Format &f, const Grid &g,
                                                   const float *x, const float *wt, Grid &best,
                                                   float &bestErr) {
  float e;
  const Grid r = refit(f, g, x, wt, &e);
  if (e < bestErr)
    bestErr = e, best = g;
  e = errorOf(f, r, x, wt);
  if (e < bestErr)
    bestErr = e, best = r;
}

// The grid of least weighted error for one block: candidates around the plain rule (the
// element of largest magnitude on the code range's end, or min/max for q4_1), each
// refitted by least squares.
// Most of weighted rounding's time: cloned for AVX-512 and AVX2, which vectorise the same
// lanes (nothing is reordered, so every clone gives the same grid).
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
Grid searchGrid(const Format &f, const float *x, const float *wt) {
  float amax = 0, max = 0, lo = x[0], hi = x[0];
  for (int j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax)
      amax = std::fabs(x[j]), max = x[j];
    lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
  }
  Grid best = f.hasMin ? Grid(half((hi - lo) / float(f.kmax)), half(lo))
                       : Grid(half(max / float(f.kmin)), 0.0f);
  if (amax == 0)
    return best;
  float bestErr = errorOf(f, best, x, wt);
  for (int t = -kSteps; t <= kSteps; ++t) {
    const float scale = 1.0f + 0.2f / kSteps * float(t); // 0.8 .. 1.2
    if (f.hasMin) {
      tryGridAndRefit(f, Grid(half((hi - lo) / (float(f.kmax) * scale)), half(lo)), x, wt,
                      best, bestErr);
      continue;
    }
    // the largest element on the negative end (the plain rule) or on the positive end
    tryGridAndRefit(f, Grid(half(max / (float(f.kmin) * scale)), 0.0f), x, wt, best, bestErr);
    tryGridAndRefit(f, Grid(half(max / (float(f.kmax) * scale)), 0.0f), x, wt, best, bestErr);
  }
  return best;
}

// Writes one block of codes k (kmin..kmax) with grid g in the format's bytes.
void packBlock(uint32_t format, const Format &f, const Grid &g, const int *k, uint8_t *dst) {
  const uint16_t d = kiln_fp32_to_fp16(g.d);
  switch (format) {
  case KILN_GGML_TYPE_Q8_0: {
    kiln_block_q8_0_t b;
    b.d = d;
    for (int j = 0; j < kBlock; ++j)
      b.qs[j] = int8_t(k[j]);
    std::memcpy(dst, &b, sizeof b);
    return;
  }
  case KILN_GGML_TYPE_Q4_0: {
    kiln_block_q4_0_t b;
    b.d = d;
    for (int j = 0; j < kBlock / 2; ++j)
      b.qs[j] = uint8_t((k[j] - f.kmin) | (k[j + 16] - f.kmin) << 4);
    std::memcpy(dst, &b, sizeof b);
    return;
  }
  case KILN_GGML_TYPE_Q4_1: {
    kiln_block_q4_1_t b;
    b.d = d;
    b.m = kiln_fp32_to_fp16(g.m);
    for (int j = 0; j < kBlock / 2; ++j)
      b.qs[j] = uint8_t(k[j] | k[j + 16] << 4);
    std::memcpy(dst, &b, sizeof b);
    return;
  }
  default: { // q3_0
    kiln_block_q3_0_t b;
    uint8_t q[kBlock];
    for (int j = 0; j < kBlock; ++j)
      q[j] = uint8_t(k[j] - f.kmin);
    kiln_pack_q3_0(&b, d, q);
    std::memcpy(dst, &b, sizeof b);
  }
  }
}

// U, upper triangular with H^-1 = U^T U, from the Cholesky factor of H in reversed order
// (P H P = L L^T gives U = P L^-1 P): one factorisation and one triangular inverse
// instead of GPTQ's three. In fp32, as GPTQ's reference code; H (n x n, symmetric) is
// damped by 1% of its mean diagonal, more if that is not enough.
bool inverseFactor(const std::vector<float> &h, size_t n, double meanDiag,
                   std::vector<float> &u, std::string &error) {
  std::vector<float> p(n * n), linv(n * n);
  for (double damp = 0.01; damp <= 10; damp *= 10) {
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        p[i * n + j] = h[(n - 1 - i) * n + (n - 1 - j)];
    for (size_t i = 0; i < n; ++i)
      p[i * n + i] += float(damp * meanDiag);
    if (!linalg::choleskyLower(p.data(), n, coreCount()))
      continue;
    linalg::lowerInverse(p.data(), linv.data(), n, coreCount());
    u.resize(n * n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        u[i * n + j] = linv[(n - 1 - i) * n + (n - 1 - j)];
    return true;
  }
  error = "the inputs' second moment is not positive definite even after damping";
  return false;
}

} // namespace

bool parseRounding(const std::string &text, Rounding &out) {
  if (text == "nearest")
    out = Rounding::Nearest;
  else if (text == "weighted")
    out = Rounding::Weighted;
  else if (text == "gptq")
    out = Rounding::Gptq;
  else
    return false;
  return true;
}

const char *roundingName(Rounding r) {
  return r == Rounding::Nearest ? "nearest" : r == Rounding::Weighted ? "weighted" : "gptq";
}

bool hasCalibratedEncoder(uint32_t format) {
  Format f;
  return formatOf(format, f);
}

void InputStats::add(const float *x, uint64_t n) {
  if (h.size() != cols * cols)
    h.assign(cols * cols, 0.0f);
  // H is symmetric: the lower triangle is accumulated (half the work), RoundingPlan
  // reads only that
  linalg::addGram(h.data(), cols, x, n, coreCount());
  samples += n;
}

bool RoundingPlan::make(Rounding rounding, const InputStats *stats, uint64_t cols,
                        RoundingPlan &plan, std::string &error) {
  if (stats && stats->cols != cols) {
    error = "input statistics of width " + std::to_string(stats->cols) + " for rows of " +
            std::to_string(cols);
    return false;
  }
  const uint64_t pc = (cols + kBlock - 1) / kBlock * kBlock;
  plan.rounding = rounding;
  plan.cols = cols;
  plan.paddedCols = pc;
  // H over the padded columns: the padding's inputs are zero (dead columns); a dead
  // column gets the mean diagonal so the factorisation exists and its rounding, which
  // multiplies zeros, moves nothing.
  std::vector<float> h(pc * pc, 0.0f);
  if (stats && stats->samples) {
    for (uint64_t i = 0; i < cols; ++i)
      for (uint64_t j = 0; j <= i; ++j)
        h[i * pc + j] = h[j * pc + i] = stats->h[i * cols + j];
  } else {
    for (uint64_t j = 0; j < cols; ++j)
      h[j * pc + j] = 1.0f;
  }
  double trace = 0;
  for (uint64_t j = 0; j < cols; ++j)
    trace += h[j * pc + j];
  const double meanDiag = std::max(trace / double(cols), 1e-30);
  // importance of each column in the scale search: its diagonal, damped as H is; the
  // padding has none
  plan.importance.assign(pc, 0.0f);
  for (uint64_t j = 0; j < cols; ++j)
    plan.importance[j] = float(h[j * pc + j] / meanDiag + 0.01);
  for (uint64_t j = 0; j < pc; ++j)
    if (h[j * pc + j] <= 0)
      h[j * pc + j] = float(meanDiag);
  // Act order (GPTQ's desc_act): columns of larger input energy are rounded first, while
  // the most columns are left to absorb their error. The block grids are then fixed from
  // the weights before any update ("static groups"), as a block's columns are no longer
  // rounded together.
  plan.order.resize(pc);
  for (uint64_t j = 0; j < pc; ++j)
    plan.order[j] = j;
  plan.u.clear();
  if (rounding != Rounding::Gptq)
    return true;
  std::stable_sort(plan.order.begin(), plan.order.end(), [&](uint64_t a, uint64_t b) {
    return h[a * pc + a] > h[b * pc + b];
  });
  std::vector<float> hp(pc * pc);
  for (uint64_t i = 0; i < pc; ++i)
    for (uint64_t j = 0; j < pc; ++j)
      hp[i * pc + j] = h[plan.order[i] * pc + plan.order[j]];
  return inverseFactor(hp, pc, meanDiag, plan.u, error);
}

bool encodeCalibrated(uint32_t format, Rounding rounding, const float *w, uint64_t rows,
                      uint64_t cols, const InputStats *stats, std::vector<uint8_t> &out,
                      uint64_t &paddedCols, std::string &error) {
  RoundingPlan plan;
  if (rounding != Rounding::Nearest && !RoundingPlan::make(rounding, stats, cols, plan, error))
    return false;
  plan.rounding = rounding;
  return encodeCalibrated(format, plan, w, rows, cols, out, paddedCols, error);
}

bool encodeCalibrated(uint32_t format, const RoundingPlan &plan, const float *w,
                      uint64_t rows, uint64_t cols, std::vector<uint8_t> &out,
                      uint64_t &paddedCols, std::string &error) {
  const Rounding rounding = plan.rounding;
  Format f;
  if (rounding != Rounding::Nearest && !formatOf(format, f)) {
    error = std::string("no calibrated rounding for format ") +
            (kiln_ggml_type_name(format) ? kiln_ggml_type_name(format) : "?");
    return false;
  }
  const uint64_t block =
      rounding == Rounding::Nearest ? kiln_ggml_block_elems(format) : uint64_t(kBlock);
  paddedCols = block ? (cols + block - 1) / block * block : cols;
  uint64_t rowBytes = 0;
  if (kiln_ggml_row_bytes(format, paddedCols, &rowBytes) != KILN_STATUS_OK) {
    error = "cannot store rows of " + std::to_string(cols) + " in format " +
            std::to_string(format);
    return false;
  }
  out.assign(rowBytes * rows, 0);
  const uint64_t pc = paddedCols;
  std::vector<float> padded(rows * pc, 0.0f);
  for (uint64_t r = 0; r < rows; ++r)
    std::copy(w + r * cols, w + (r + 1) * cols, padded.begin() + long(r * pc));
  if (rounding == Rounding::Nearest) {
    for (uint64_t r = 0; r < rows; ++r)
      if (kiln_quantize(format, padded.data() + r * pc, out.data() + r * rowBytes, pc) !=
          KILN_STATUS_OK) {
        error = "cannot quantise to format " + std::to_string(format);
        return false;
      }
    return true;
  }
  for (float v : padded)
    if (!std::isfinite(v)) {
      error = "the weight has values that are not finite (NaN or infinity)";
      return false;
    }
  if (plan.cols != cols || plan.paddedCols != pc) {
    error = "a rounding plan for rows of " + std::to_string(plan.cols) + " used for rows of " +
            std::to_string(cols);
    return false;
  }
  const bool gptq = rounding == Rounding::Gptq;
  const std::vector<uint64_t> &perm = plan.order;
  const std::vector<float> &wt = plan.importance;
  const float *u = plan.u.data(); // pc x pc (gptq)

  // Rows in chunks of 256 (independent; the chunking, not the thread count, fixes the
  // floating-point order), the columns in lazy batches of 128 as GPTQ does.
  constexpr uint64_t kRows = 256, kBatch = 128;
  const uint64_t chunks = (rows + kRows - 1) / kRows, nb = pc / kBlock;
  auto runChunk = [&](uint64_t c) {
    const uint64_t r0 = c * kRows, nr = std::min(kRows, rows - r0);
    std::vector<float> wc(nr * pc); // the chunk's rows, columns in rounding order
    for (uint64_t r = 0; r < nr; ++r)
      for (uint64_t i = 0; i < pc; ++i)
        wc[r * pc + i] = padded[(r0 + r) * pc + perm[i]];
    std::vector<Grid> grids(nr * nb);
    // every block's grid from the weights before any update (GPTQ's static groups;
    // weighted rounding has no updates)
    for (uint64_t r = 0; r < nr; ++r)
      for (uint64_t b = 0; b < nb; ++b)
        grids[r * nb + b] =
            searchGrid(f, padded.data() + (r0 + r) * pc + b * kBlock, wt.data() + b * kBlock);
    std::vector<int> codes(nr * pc);
    std::vector<float> err(nr * kBatch); // row r's scaled errors of the batch's columns
    for (uint64_t b0 = 0; b0 < pc; b0 += kBatch) {
      const uint64_t b1 = std::min(pc, b0 + kBatch), bw = b1 - b0;
      for (uint64_t i = b0; i < b1; ++i) {
        const uint64_t col = perm[i];
        const float *ui = u + i * pc;
        for (uint64_t r = 0; r < nr; ++r) {
          const Grid &g = grids[r * nb + col / kBlock];
          float *wr = wc.data() + r * pc;
          const int k = codeOf(f, g, wr[i]);
          codes[r * pc + col] = k;
          if (!gptq)
            continue;
          // the error spread over the batch's columns not rounded yet
          const float e = (wr[i] - valueOf(g, k)) / ui[i];
          err[r * kBatch + (i - b0)] = e;
          linalg::subtractScaled(wr + i + 1, ui + i + 1, e, b1 - i - 1);
        }
      }
      if (gptq && b1 < pc) // and over the columns after the batch
        linalg::addProduct(wc.data() + b1, pc, err.data(), kBatch, u + b0 * pc + b1, pc, nr,
                           pc - b1, bw, true);
    }
    const size_t blockBytes = kiln_ggml_block_bytes(format);
    for (uint64_t r = 0; r < nr; ++r)
      for (uint64_t b = 0; b < nb; ++b)
        packBlock(format, f, grids[r * nb + b], codes.data() + r * pc + b * kBlock,
                  out.data() + (r0 + r) * rowBytes + b * blockBytes);
  };
  parallelFor(chunks, coreCount(), runChunk);
  return true;
}

} // namespace kiln::quant
