#include "models/weights/CalibratedQuant.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"

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
inline float codeOf(const Format &f, const Grid &g, float x) {
  const float t = std::min(std::max((x - g.m) * g.id, float(f.kmin)), float(f.kmax));
  return (t + 12582912.0f) - 12582912.0f;
}

float valueOf(const Grid &g, float k) { return k * g.d + g.m; }

// Sums over a block keep 8 partial sums, lane l taking elements l, l + 8, ...: every
// lane is a plain sequential sum, so the loops vectorise (4 or 8 lanes wide) without
// reordering a float addition, and every build gives the same bits.
inline float sum8(const float *p) {
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

// sum_j wt_j (x_j - value(code(x_j)))^2
float errorOf(const Format &f, const Grid &g, const float *x, const float *wt) {
  float e[8] = {};
  for (int j0 = 0; j0 < kBlock; j0 += 8)
    for (int l = 0; l < 8; ++l) {
      const float r = x[j0 + l] - valueOf(g, codeOf(f, g, x[j0 + l]));
      e[l] += wt[j0 + l] * r * r;
    }
  return sum8(e);
}

// Weighted least-squares d (and m) for the codes grid g gives x: the refit of
// llama.cpp's make_qx_quants / make_qkx2_quants, under importance wt.
Grid refit(const Format &f, const Grid &g, const float *x, const float *wt) {
  float sw[8] = {}, sk[8] = {}, skk[8] = {}, sx[8] = {}, skx[8] = {};
  for (int j0 = 0; j0 < kBlock; j0 += 8)
    for (int l = 0; l < 8; ++l) {
      const float k = codeOf(f, g, x[j0 + l]), w = wt[j0 + l], wk = w * k;
      sw[l] += w, sk[l] += wk, skk[l] += wk * k, sx[l] += w * x[j0 + l], skx[l] += wk * x[j0 + l];
    }
  const double W = sum8(sw), K = sum8(sk), KK = sum8(skk), X = sum8(sx), KX = sum8(skx);
  if (!f.hasMin)
    return Grid(KK > 0 ? half(float(KX / KK)) : 0.0f, 0.0f);
  const double det = W * KK - K * K;
  if (det <= 0)
    return g;
  return Grid(half(float((W * KX - K * X) / det)), half(float((KK * X - K * KX) / det)));
}

// The grid of least weighted error for one block: candidates around the plain rule (the
// element of largest magnitude on the code range's end, or min/max for q4_1), each
// refitted by least squares.
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
  auto tryGrid = [&](Grid g) {
    for (int it = 0; it < 2; ++it) {
      const float e = errorOf(f, g, x, wt);
      if (e < bestErr)
        bestErr = e, best = g;
      g = refit(f, g, x, wt);
    }
  };
  for (int t = -kSteps; t <= kSteps; ++t) {
    const float scale = 1.0f + 0.2f / kSteps * float(t); // 0.8 .. 1.2
    if (f.hasMin) {
      tryGrid(Grid(half((hi - lo) / (float(f.kmax) * scale)), half(lo)));
      continue;
    }
    // the largest element on the negative end (the plain rule) or on the positive end
    tryGrid(Grid(half(max / (float(f.kmin) * scale)), 0.0f));
    tryGrid(Grid(half(max / (float(f.kmax) * scale)), 0.0f));
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

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using ColF = Eigen::MatrixXf;

// L^-1 of a lower triangular L, by blocks of columns: X_kk = L_kk^-1 and, down the block
// column, X_ik = -L_ii^-1 (L_i,k..i-1 X_k..i-1,k). n^3/3 multiply-adds instead of the n^3
// of solving against the identity; block columns are independent, so two threads take them
// in turn (each column's arithmetic does not depend on the split).
ColF lowerInverse(const ColF &l) {
  const Eigen::Index n = l.rows(), b = 128, nb = (n + b - 1) / b;
  ColF x = ColF::Zero(n, n);
  auto column = [&](Eigen::Index k) {
    const Eigen::Index c0 = k * b, cw = std::min(b, n - c0);
    x.block(c0, c0, cw, cw).setIdentity();
    l.block(c0, c0, cw, cw).triangularView<Eigen::Lower>().solveInPlace(
        x.block(c0, c0, cw, cw));
    for (Eigen::Index i = k + 1; i < nb; ++i) {
      const Eigen::Index r0 = i * b, rw = std::min(b, n - r0);
      ColF t = -l.block(r0, c0, rw, r0 - c0) * x.block(c0, c0, r0 - c0, cw);
      l.block(r0, r0, rw, rw).triangularView<Eigen::Lower>().solveInPlace(t);
      x.block(r0, c0, rw, cw) = t;
    }
  };
  std::thread other([&] {
    for (Eigen::Index k = 1; k < nb; k += 2)
      column(k);
  });
  for (Eigen::Index k = 0; k < nb; k += 2)
    column(k);
  other.join();
  return x;
}

// U, upper triangular with H^-1 = U^T U, from the Cholesky factor of H in reversed order
// (P H P = L L^T gives U = P L^-1 P): one factorisation and one triangular inverse
// instead of GPTQ's three. In fp32, as GPTQ's reference code; H is damped by 1% of its
// mean diagonal, more if that is not enough.
bool inverseFactor(const MatF &h, double meanDiag, std::vector<float> &u, std::string &error) {
  const Eigen::Index n = h.rows();
  for (double damp = 0.01; damp <= 10; damp *= 10) {
    ColF p = h.reverse();
    p.diagonal().array() += float(damp * meanDiag);
    Eigen::LLT<ColF> llt(p);
    if (llt.info() != Eigen::Success)
      continue;
    const ColF linv = lowerInverse(llt.matrixL());
    u.resize(size_t(n * n));
    Eigen::Map<MatF>(u.data(), n, n) = linv.reverse();
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
  Eigen::Map<const MatF> xs(x, Eigen::Index(n), Eigen::Index(cols));
  // H is symmetric: the lower triangle is accumulated (half the work), RoundingPlan
  // reads only that
  Eigen::Map<MatF> hm(h.data(), Eigen::Index(cols), Eigen::Index(cols));
  hm.selfadjointView<Eigen::Lower>().rankUpdate(xs.transpose());
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
  MatF h = MatF::Zero(Eigen::Index(pc), Eigen::Index(pc));
  if (stats && stats->samples) {
    Eigen::Map<const MatF> lower(stats->h.data(), Eigen::Index(cols), Eigen::Index(cols));
    h.topLeftCorner(Eigen::Index(cols), Eigen::Index(cols)) =
        lower.selfadjointView<Eigen::Lower>();
  } else {
    h.diagonal().head(Eigen::Index(cols)).setOnes();
  }
  const double meanDiag =
      std::max(double(h.diagonal().head(Eigen::Index(cols)).mean()), 1e-30);
  // importance of each column in the scale search: its diagonal, damped as H is; the
  // padding has none
  plan.importance.assign(pc, 0.0f);
  for (uint64_t j = 0; j < cols; ++j)
    plan.importance[j] = float(h(Eigen::Index(j), Eigen::Index(j)) / meanDiag + 0.01);
  for (uint64_t j = 0; j < pc; ++j)
    if (h(Eigen::Index(j), Eigen::Index(j)) <= 0)
      h(Eigen::Index(j), Eigen::Index(j)) = float(meanDiag);
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
    return h(Eigen::Index(a), Eigen::Index(a)) > h(Eigen::Index(b), Eigen::Index(b));
  });
  MatF hp = MatF::Zero(Eigen::Index(pc), Eigen::Index(pc));
  for (uint64_t i = 0; i < pc; ++i)
    for (uint64_t j = 0; j < pc; ++j)
      hp(Eigen::Index(i), Eigen::Index(j)) =
          h(Eigen::Index(plan.order[i]), Eigen::Index(plan.order[j]));
  return inverseFactor(hp, meanDiag, plan.u, error);
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
  Eigen::Map<const MatF> u(plan.u.data(), gptq ? Eigen::Index(pc) : 0,
                           gptq ? Eigen::Index(pc) : 0);

  // Rows in chunks of 256 (independent; the chunking, not the thread count, fixes the
  // floating-point order), the columns in lazy batches of 128 as GPTQ does.
  constexpr uint64_t kRows = 256, kBatch = 128;
  const uint64_t chunks = (rows + kRows - 1) / kRows, nb = pc / kBlock;
  auto runChunk = [&](uint64_t c) {
    const uint64_t r0 = c * kRows, nr = std::min(kRows, rows - r0);
    MatF wc = MatF::Zero(Eigen::Index(nr), Eigen::Index(pc)); // columns in rounding order
    for (uint64_t r = 0; r < nr; ++r)
      for (uint64_t i = 0; i < pc; ++i)
        wc(Eigen::Index(r), Eigen::Index(i)) = padded[(r0 + r) * pc + perm[i]];
    std::vector<Grid> grids(nr * nb);
    // every block's grid from the weights before any update (GPTQ's static groups;
    // weighted rounding has no updates)
    for (uint64_t r = 0; r < nr; ++r)
      for (uint64_t b = 0; b < nb; ++b)
        grids[r * nb + b] =
            searchGrid(f, padded.data() + (r0 + r) * pc + b * kBlock, wt.data() + b * kBlock);
    std::vector<int> codes(nr * pc);
    for (uint64_t b0 = 0; b0 < pc; b0 += kBatch) {
      const uint64_t b1 = std::min(pc, b0 + kBatch);
      MatF err(Eigen::Index(nr), Eigen::Index(b1 - b0));
      for (uint64_t i = b0; i < b1; ++i) {
        const uint64_t col = perm[i];
        for (uint64_t r = 0; r < nr; ++r) {
          const Grid &g = grids[r * nb + col / kBlock];
          const float x = wc(Eigen::Index(r), Eigen::Index(i));
          const int k = codeOf(f, g, x);
          codes[r * pc + col] = k;
          if (gptq)
            err(Eigen::Index(r), Eigen::Index(i - b0)) =
                (x - valueOf(g, k)) / u(Eigen::Index(i), Eigen::Index(i));
        }
        if (gptq && i + 1 < b1)
          wc.block(0, Eigen::Index(i + 1), Eigen::Index(nr), Eigen::Index(b1 - i - 1)).noalias() -=
              err.col(Eigen::Index(i - b0)) *
              u.row(Eigen::Index(i)).segment(Eigen::Index(i + 1), Eigen::Index(b1 - i - 1));
      }
      if (gptq && b1 < pc)
        wc.rightCols(Eigen::Index(pc - b1)).noalias() -=
            err * u.block(Eigen::Index(b0), Eigen::Index(b1), Eigen::Index(b1 - b0),
                          Eigen::Index(pc - b1));
    }
    const size_t blockBytes = kiln_ggml_block_bytes(format);
    for (uint64_t r = 0; r < nr; ++r)
      for (uint64_t b = 0; b < nb; ++b)
        packBlock(format, f, grids[r * nb + b], codes.data() + r * pc + b * kBlock,
                  out.data() + (r0 + r) * rowBytes + b * blockBytes);
  };
  const uint64_t threads =
      std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, std::min<uint64_t>(8, chunks));
  std::vector<std::thread> pool;
  for (uint64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (uint64_t c = t; c < chunks; c += threads)
        runChunk(c);
    });
  for (std::thread &t : pool)
    t.join();
  return true;
}

} // namespace kiln::quant
