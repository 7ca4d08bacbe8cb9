// Differential tests of the CPU micro-kernels (codegen/common/ukernel_abi.h) against the
// reference executor's op math (compiler/eval/OpKernels), as ggml's test-backend-ops does
// for its backends. Built once per kernel library (generic C, x86-64-v3, x86-64-v4): the
// same tests, prefixed with the library's name in ctest.
//
// Linear is compared with x * dequantize(W)^T computed by Eigen on the SAME dequantised
// weights (kiln_dequantize), so every format differs from the reference only by float
// rounding; the bound is relative to the dot product's magnitude sum_i |x_i w_i|. Every
// kernel is run with a serial parallel_for and with one that runs tasks on two (and three)
// std::threads, and the results must be bit-identical. The largest observed errors are
// printed ("[max-error] ...") for the record.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common.h" // kiln_uk_expf, measured directly
#include "compiler/eval/OpKernels.h"
#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "ukernel_abi.h"
#include "UkernelTestSupport.h"

namespace {

using kiln::Matrix;

class Ukernel : public ::testing::Test {
protected:
  void SetUp() override {
    if (!isaSupported())
      GTEST_SKIP() << "this CPU cannot run the " << KILN_UK_TEST_ISA << " kernels";
  }
};
using UkernelLinear = Ukernel;
using UkernelEmbed = Ukernel;
using UkernelRmsNorm = Ukernel;
using UkernelRope = Ukernel;
using UkernelAttention = Ukernel;
using UkernelEltwise = Ukernel;
using UkernelExpf = Ukernel;

const char *formatName(uint32_t f) { return kiln_ggml_type_name(f); }

std::vector<float> randomVector(std::mt19937 &rng, size_t n, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng) * scale;
  return v;
}

Matrix toMatrix(const std::vector<float> &v, int64_t rows, int64_t cols) {
  Matrix m(rows, cols);
  std::memcpy(m.data(), v.data(), size_t(rows * cols) * sizeof(float));
  return m;
}

bool bitEqual(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A [rows, cols] weight in `format` as the compiler lays it out: rows at row_stride bytes,
// block-format rows of ceil(cols/32) blocks with the last one zero-padded; f32/f16/q4 rows
// padded to 16 bytes with 0xFF (NaN halves/floats, NaN-scaled q4 codes), so a kernel
// reading past a row's elements or blocks would produce NaN. q8_0 rows are exactly their
// blocks, q4_0 rows (18-byte blocks) leave the scales at 2-byte alignment.
struct Weights {
  uint32_t format = 0;
  int64_t rowStride = 0;
  std::vector<uint8_t> bytes;
  Matrix dequantized; // [rows, cols], what kiln_dequantize gives
};

Weights makeWeights(std::mt19937 &rng, uint32_t format, int32_t rows, int32_t cols) {
  Weights w;
  w.format = format;
  const int32_t block = int32_t(kiln_ggml_block_elems(format));
  const int32_t padded = (cols + block - 1) / block * block;
  uint64_t rowBytes = 0;
  EXPECT_EQ(kiln_ggml_row_bytes(format, uint64_t(padded), &rowBytes), KILN_STATUS_OK);
  w.rowStride =
      format == KILN_GGML_TYPE_Q8_0 ? int64_t(rowBytes) : int64_t((rowBytes + 15) / 16 * 16);
  w.bytes.assign(size_t(w.rowStride) * size_t(rows), 0xFF);
  w.dequantized.resize(rows, cols);
  std::vector<float> row(static_cast<size_t>(padded)), decoded(static_cast<size_t>(padded));
  for (int32_t r = 0; r < rows; ++r) {
    // rows of different magnitudes, so q8_0 scales differ
    const float scale = 0.05f + 2.0f * float(r % 7) / 7.0f;
    std::vector<float> v = randomVector(rng, size_t(cols), scale);
    std::fill(row.begin(), row.end(), 0.0f);
    std::copy(v.begin(), v.end(), row.begin());
    uint8_t *dst = w.bytes.data() + size_t(r) * size_t(w.rowStride);
    EXPECT_EQ(kiln_quantize(format, row.data(), dst, uint64_t(padded)), KILN_STATUS_OK);
    EXPECT_EQ(kiln_dequantize(format, dst, decoded.data(), uint64_t(padded)), KILN_STATUS_OK);
    for (int32_t i = 0; i < cols; ++i)
      w.dequantized(r, i) = decoded[size_t(i)];
  }
  return w;
}

// Largest error seen per format, printed when the suite ends.
struct MaxError {
  const char *what;
  double value = 0;
  explicit MaxError(const char *w) : what(w) {}
  void update(double e) { value = std::max(value, e); }
  ~MaxError() {
    std::printf("[max-error] %s %s: %.3g\n", KILN_UK_TEST_ISA[0] ? KILN_UK_TEST_ISA : "generic",
                what, value);
  }
};

// ---------------------------------------------------------------------------------------
// linear

void checkLinear(uint32_t format, int32_t n, int32_t in, int32_t out, double tol,
                 MaxError &maxErr) {
  SCOPED_TRACE(std::string(formatName(format)) + " n=" + std::to_string(n) +
               " in=" + std::to_string(in) + " out=" + std::to_string(out));
  std::mt19937 rng(uint32_t(n * 1000003 + in * 1009 + out * 7 + format));
  const Weights w = makeWeights(rng, format, out, in);
  // x has NaN sentinels after the last token: reading past `in` shows up as NaN.
  std::vector<float> x = randomVector(rng, size_t(n) * size_t(in) + 16, 1.5f);
  std::fill(x.begin() + ptrdiff_t(n) * in, x.end(), std::numeric_limits<float>::quiet_NaN());

  const Matrix X = toMatrix(x, n, in);
  const Matrix want = X * w.dequantized.transpose();

  Ctx serial(1), two(2), three(3);
  std::vector<float> y1(size_t(n) * size_t(out), -7.0f), y2(y1.size(), -8.0f), y3(y1.size(), -9.0f);
  kiln_uk_linear(&serial.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, out, y1.data());
  kiln_uk_linear(&two.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, out, y2.data());
  kiln_uk_linear(&three.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, out, y3.data());
  EXPECT_TRUE(bitEqual(y1, y2)) << "2 threads changed the result";
  EXPECT_TRUE(bitEqual(y1, y3)) << "3 threads changed the result";
  const bool large = int64_t(n) * in * out >= KILN_UK_LINEAR_PARALLEL_MIN_WORK;
  EXPECT_EQ(two.calls() > 0, large && out > 1) << "parallel_for use does not follow the work size";

  for (int32_t t = 0; t < n; ++t)
    for (int32_t o = 0; o < out; ++o) {
      double mag = 0;
      for (int32_t i = 0; i < in; ++i)
        mag += std::fabs(double(X(t, i)) * double(w.dequantized(o, i)));
      const double got = y1[size_t(t) * size_t(out) + size_t(o)];
      const double err = std::fabs(got - double(want(t, o))) / std::max(mag, 1e-30);
      ASSERT_TRUE(std::isfinite(got)) << "y[" << t << "," << o << "] = " << got;
      ASSERT_LE(err, tol) << "y[" << t << "," << o << "] = " << got << ", want " << want(t, o)
                          << " (|x||w| = " << mag << ")";
      maxErr.update(err);
    }
}

TEST_F(UkernelLinear, F32) {
  static MaxError maxErr("linear f32 (|err| / sum|x w|)");
  for (int32_t n : {1, 3, 17})
    for (int32_t in : {7, 32, 64, 172, 256})
      for (int32_t out : {1, 5, 64, 512})
        checkLinear(KILN_GGML_TYPE_F32, n, in, out, 1e-5, maxErr);
}

TEST_F(UkernelLinear, F16) {
  static MaxError maxErr("linear f16 (|err| / sum|x w|)");
  for (int32_t n : {1, 3, 17})
    for (int32_t in : {7, 32, 64, 172, 256})
      for (int32_t out : {1, 5, 64, 512})
        checkLinear(KILN_GGML_TYPE_F16, n, in, out, 1e-4, maxErr);
}

TEST_F(UkernelLinear, Q8_0) {
  static MaxError maxErr("linear q8_0 (|err| / sum|x w|)");
  for (int32_t n : {1, 3, 17})
    for (int32_t in : {7, 32, 64, 172, 256})
      for (int32_t out : {1, 5, 64, 512})
        checkLinear(KILN_GGML_TYPE_Q8_0, n, in, out, 1e-4, maxErr);
}

// int4 formats: the kernels decode exactly the dequantised weights, so the bound is q8_0's.
// in = 7 and 172 end in a partial block, 16/48 split a block between the two halves of
// its nibbles (a 16-lane chunk boundary), out = 5 leaves a row tail after 8-row tiles.
TEST_F(UkernelLinear, Q4_0) {
  static MaxError maxErr("linear q4_0 (|err| / sum|x w|)");
  for (int32_t n : {1, 3, 17})
    for (int32_t in : {7, 16, 32, 48, 64, 172, 256})
      for (int32_t out : {1, 5, 64, 512})
        checkLinear(KILN_GGML_TYPE_Q4_0, n, in, out, 1e-4, maxErr);
}

TEST_F(UkernelLinear, Q4_1) {
  static MaxError maxErr("linear q4_1 (|err| / sum|x w|)");
  for (int32_t n : {1, 3, 17})
    for (int32_t in : {7, 16, 32, 48, 64, 172, 256})
      for (int32_t out : {1, 5, 64, 512})
        checkLinear(KILN_GGML_TYPE_Q4_1, n, in, out, 1e-4, maxErr);
}

// A larger decode and prefill shape (several 8-row tiles per task, 4096-wide rows as in a
// 7B layer's K dimension, kept short in out so the test stays fast).
TEST_F(UkernelLinear, Int4WideRows) {
  static MaxError maxErr("linear q4 in=4096 (|err| / sum|x w|)");
  for (uint32_t format : {uint32_t(KILN_GGML_TYPE_Q4_0), uint32_t(KILN_GGML_TYPE_Q4_1)})
    for (int32_t n : {1, 3})
      checkLinear(format, n, 4096, 37, 1e-4, maxErr);
}

// Shapes of stories260K (dim 64, hidden 172, vocab 512): small enough to stay serial.
TEST_F(UkernelLinear, TinyModelShapesRunSerially) {
  std::mt19937 rng(5);
  Ctx two(2);
  for (auto [in, out] : {std::pair{64, 64}, {64, 172}, {172, 64}, {64, 512}}) {
    const Weights w = makeWeights(rng, KILN_GGML_TYPE_F32, out, in);
    std::vector<float> x = randomVector(rng, size_t(in)), y(static_cast<size_t>(out));
    kiln_uk_linear(&two.ctx, KILN_GGML_TYPE_F32, x.data(), 1, in, w.bytes.data(), w.rowStride, out,
                   y.data());
  }
  EXPECT_EQ(two.calls(), 0);
}

// ---------------------------------------------------------------------------------------
// embed: decoding is exact, so the rows must be bit-identical to the reference's.

TEST_F(UkernelEmbed, AllFormatsExact) {
  for (uint32_t format : {KILN_GGML_TYPE_F32, KILN_GGML_TYPE_F16, KILN_GGML_TYPE_Q8_0,
                          KILN_GGML_TYPE_Q4_0, KILN_GGML_TYPE_Q4_1})
    for (int32_t dim : {7, 32, 48, 64, 172}) {
      SCOPED_TRACE(std::string(formatName(format)) + " dim=" + std::to_string(dim));
      std::mt19937 rng(uint32_t(dim + format));
      const int32_t vocab = 37;
      const Weights table = makeWeights(rng, format, vocab, dim);
      const std::vector<int32_t> ids = {0, 36, 5, 5, 17, 1, 30};
      Matrix want;
      std::string error;
      ASSERT_TRUE(kiln::embedRows(table.dequantized, ids, want, error)) << error;
      Ctx serial(1);
      std::vector<float> out(ids.size() * size_t(dim) + 4, -1.0f);
      kiln_uk_embed(&serial.ctx, format, table.bytes.data(), table.rowStride, dim, ids.data(),
                    int32_t(ids.size()), out.data());
      EXPECT_EQ(std::memcmp(out.data(), want.data(), ids.size() * size_t(dim) * sizeof(float)), 0);
      for (size_t i = ids.size() * size_t(dim); i < out.size(); ++i)
        EXPECT_EQ(out[i], -1.0f) << "wrote past the output";
    }
}

// ---------------------------------------------------------------------------------------
// rms_norm

TEST_F(UkernelRmsNorm, MatchesReference) {
  static MaxError maxErr("rms_norm (relative)");
  for (int32_t n : {1, 3, 17})
    for (int32_t dim : {7, 32, 64, 172, 256}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " dim=" + std::to_string(dim));
      std::mt19937 rng(uint32_t(n * 31 + dim));
      const std::vector<float> x = randomVector(rng, size_t(n) * size_t(dim), 3.0f);
      const std::vector<float> wv = randomVector(rng, size_t(dim));
      const float eps = 1e-5f;
      Matrix want;
      kiln::rmsNorm(toMatrix(x, n, dim), toMatrix(wv, 1, dim), eps, want);
      std::vector<float> out(x.size());
      kiln_uk_rms_norm(x.data(), wv.data(), n, dim, eps, out.data());
      std::vector<float> inPlace = x; // out may alias x
      kiln_uk_rms_norm(inPlace.data(), wv.data(), n, dim, eps, inPlace.data());
      EXPECT_TRUE(bitEqual(out, inPlace));
      for (size_t i = 0; i < out.size(); ++i) {
        const double ref = want.data()[i];
        const double err = std::fabs(double(out[i]) - ref) / std::max(std::fabs(ref), 1e-30);
        ASSERT_LE(err, 1e-6) << "element " << i << ": " << out[i] << " vs " << ref;
        maxErr.update(err);
      }
    }
}

// ---------------------------------------------------------------------------------------
// rope: the tables hold exactly the angles the reference computes (pos * theta_scale^i by
// repeated float multiplication), so only the rotation's rounding can differ.

struct RopeTables {
  std::vector<float> cosT, sinT;
};

RopeTables makeRopeTables(int32_t maxCtx, int32_t rotaryDims, float theta) {
  RopeTables t;
  const int32_t half = rotaryDims / 2;
  const float thetaScale = std::pow(theta, -2.0f / float(rotaryDims));
  for (int32_t p = 0; p < maxCtx; ++p) {
    float angle = float(p);
    for (int32_t i = 0; i < half; ++i) {
      t.cosT.push_back(std::cos(angle));
      t.sinT.push_back(std::sin(angle));
      angle *= thetaScale;
    }
  }
  return t;
}

TEST_F(UkernelRope, BothPairingsAndPartialRotation) {
  static MaxError maxErr("rope (|err| / (|x0|+|x1|))");
  const int32_t maxCtx = 64, heads = 3;
  const float theta = 10000.0f;
  for (int32_t headDim : {8, 16})
    for (int32_t rotaryDims : {headDim, headDim / 2, 4})
      for (int32_t rotateHalf : {0, 1})
        for (int32_t n : {1, 3, 17}) {
          SCOPED_TRACE("head_dim=" + std::to_string(headDim) +
                       " rotary=" + std::to_string(rotaryDims) +
                       " rotate_half=" + std::to_string(rotateHalf) + " n=" + std::to_string(n));
          std::mt19937 rng(uint32_t(headDim * 100 + rotaryDims * 10 + rotateHalf + n * 1000));
          const int32_t width = heads * headDim;
          std::vector<float> x = randomVector(rng, size_t(n) * size_t(width), 2.0f);
          std::vector<int32_t> pos(static_cast<size_t>(n));
          for (int32_t t = 0; t < n; ++t)
            pos[size_t(t)] = (t * 13 + 5 * n) % maxCtx;
          pos[0] = maxCtx - 1;
          const RopeTables tab = makeRopeTables(maxCtx, rotaryDims, theta);
          Matrix want;
          kiln::applyRope(toMatrix(x, n, width), pos,
                          kiln::RopeParams{headDim, rotaryDims, theta, rotateHalf != 0}, want);
          std::vector<float> got = x;
          kiln_uk_rope(got.data(), n, width, headDim, rotaryDims, rotateHalf, pos.data(),
                       tab.cosT.data(), tab.sinT.data());
          for (int32_t t = 0; t < n; ++t)
            for (int32_t h = 0; h < heads; ++h)
              for (int32_t i = 0; i < headDim; ++i) {
                const size_t at = size_t(t) * size_t(width) + size_t(h * headDim + i);
                if (i >= rotaryDims) { // untouched
                  ASSERT_EQ(got[at], x[at]) << "element " << i << " is past rotary_dims";
                  continue;
                }
                // the pair partner of i, for the error scale
                const int32_t half = rotaryDims / 2;
                const int32_t j = rotateHalf ? (i < half ? i + half : i - half) : (i ^ 1);
                const double scale = std::fabs(x[at]) + std::fabs(x[at - size_t(i) + size_t(j)]);
                const double err =
                    std::fabs(double(got[at]) - double(want.data()[at])) / std::max(scale, 1e-30);
                ASSERT_LE(err, 1e-6) << "t=" << t << " h=" << h << " i=" << i;
                maxErr.update(err);
              }
        }
}

// ---------------------------------------------------------------------------------------
// attention: prefill, then decode steps and a second prefill chunk, all through the cache.

struct AttentionCase {
  int32_t heads, kvHeads, headDim;
  std::vector<int32_t> map; // empty: kv_head_map = NULL
};

void runAttention(const AttentionCase &c, MaxError &maxErr) {
  const int32_t maxCtx = 48;
  const float scale = 1.0f / std::sqrt(float(c.headDim));
  kiln::AttentionParams p{c.heads, c.kvHeads, c.headDim, scale, {}};
  for (int32_t h = 0; h < c.heads; ++h)
    p.kvHeadOf.push_back(c.map.empty() ? h / (c.heads / c.kvHeads) : c.map[size_t(h)]);
  const int32_t qWidth = c.heads * c.headDim, kvWidth = c.kvHeads * c.headDim;

  kiln::KvCache ref;
  ref.k = Matrix::Zero(maxCtx, kvWidth);
  ref.v = Matrix::Zero(maxCtx, kvWidth);
  // kernel caches (serial and threaded runs keep their own), NaN where never written
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> kc1(size_t(maxCtx) * size_t(kvWidth), nan), vc1 = kc1, kc2 = kc1, vc2 = kc1;
  std::vector<float> scores1(size_t(c.heads) * size_t(maxCtx)), scores2 = scores1;
  Ctx serial(1), two(2);
  std::mt19937 rng(uint32_t(c.heads * 100 + c.kvHeads * 10 + c.headDim + c.map.size()));

  int32_t next = 0;
  for (int32_t n : {17, 1, 1, 3, 1, 20}) {
    SCOPED_TRACE("step of " + std::to_string(n) + " tokens at position " + std::to_string(next));
    std::vector<int32_t> pos;
    for (int32_t t = 0; t < n; ++t)
      pos.push_back(next + t);
    next += n;
    const std::vector<float> q = randomVector(rng, size_t(n) * size_t(qWidth), 2.0f);
    const std::vector<float> k = randomVector(rng, size_t(n) * size_t(kvWidth), 2.0f);
    const std::vector<float> v = randomVector(rng, size_t(n) * size_t(kvWidth));
    Matrix want;
    std::string error;
    ASSERT_TRUE(kiln::attention(toMatrix(q, n, qWidth), toMatrix(k, n, kvWidth),
                                toMatrix(v, n, kvWidth), pos, p, ref, want, error))
        << error;
    const int32_t *map = c.map.empty() ? nullptr : c.map.data();
    std::vector<float> out1(size_t(n) * size_t(qWidth)), out2(out1.size());
    kiln_uk_attention(&serial.ctx, q.data(), k.data(), v.data(), n, pos.data(), c.heads, c.kvHeads,
                      c.headDim, scale, map, kc1.data(), vc1.data(), maxCtx, scores1.data(),
                      out1.data());
    kiln_uk_attention(&two.ctx, q.data(), k.data(), v.data(), n, pos.data(), c.heads, c.kvHeads,
                      c.headDim, scale, map, kc2.data(), vc2.data(), maxCtx, scores2.data(),
                      out2.data());
    EXPECT_TRUE(bitEqual(out1, out2)) << "2 threads changed the result";
    // the cache rows written so far equal the reference's
    EXPECT_EQ(std::memcmp(kc1.data(), ref.k.data(), size_t(next) * size_t(kvWidth) * 4), 0);
    EXPECT_EQ(std::memcmp(vc1.data(), ref.v.data(), size_t(next) * size_t(kvWidth) * 4), 0);
    // outputs are convex combinations of V rows (|v| <= 1): absolute error
    for (size_t i = 0; i < out1.size(); ++i) {
      const double err = std::fabs(double(out1[i]) - double(want.data()[i]));
      ASSERT_LE(err, 2e-6) << "element " << i << ": " << out1[i] << " vs " << want.data()[i];
      maxErr.update(err);
    }
  }
  EXPECT_GT(two.calls(), 0) << "the 20-token step should run in parallel";
}

TEST_F(UkernelAttention, GqaDefaultMap) {
  static MaxError maxErr("attention GQA, map NULL (abs, |v| <= 1)");
  runAttention({8, 2, 16, {}}, maxErr);
  runAttention({6, 3, 20, {}}, maxErr); // head_dim not a multiple of 8
}

TEST_F(UkernelAttention, GqaExplicitMap) {
  static MaxError maxErr("attention GQA, kv_head_map (abs, |v| <= 1)");
  runAttention({6, 2, 16, {1, 1, 0, 0, 1, 0}}, maxErr);
  runAttention({4, 4, 12, {3, 2, 1, 0}}, maxErr);
}

TEST_F(UkernelAttention, MultiHead) {
  static MaxError maxErr("attention MHA (abs, |v| <= 1)");
  runAttention({4, 4, 8, {}}, maxErr);
}

// ---------------------------------------------------------------------------------------
// elementwise

TEST_F(UkernelEltwise, SiluMulAdd) {
  static MaxError maxErr("silu (relative)");
  std::mt19937 rng(11);
  std::vector<float> x = randomVector(rng, 1000, 12.0f);
  for (float e : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, 88.8f, 100.0f, -87.0f, -88.5f, -100.0f,
                  -104.0f, 1e30f, -1e30f})
    x.push_back(e);
  std::vector<float> y(x.size());
  kiln_uk_silu(x.data(), int64_t(x.size()), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const float ref = x[i] / (1.0f + std::exp(-x[i]));
    const double err =
        std::fabs(double(y[i]) - double(ref)) / std::max(double(std::fabs(ref)), 1e-37);
    ASSERT_LE(err, 1e-6) << "silu(" << x[i] << ") = " << y[i] << ", want " << ref;
    maxErr.update(err);
  }
  std::vector<float> inPlace = x;
  kiln_uk_silu(inPlace.data(), int64_t(inPlace.size()), inPlace.data());
  EXPECT_TRUE(bitEqual(inPlace, y));

  const std::vector<float> a = randomVector(rng, 777), b = randomVector(rng, 777);
  std::vector<float> m(a.size()), s(a.size());
  kiln_uk_mul(a.data(), b.data(), int64_t(a.size()), m.data());
  kiln_uk_add(a.data(), b.data(), int64_t(a.size()), s.data());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(m[i], a[i] * b[i]);
    ASSERT_EQ(s[i], a[i] + b[i]);
  }
  std::vector<float> acc = a; // out aliasing an input
  kiln_uk_add(acc.data(), b.data(), int64_t(acc.size()), acc.data());
  EXPECT_TRUE(bitEqual(acc, s));
  kiln_uk_mul(a.data(), b.data(), 0, nullptr); // empty: touches nothing
}

TEST_F(UkernelEltwise, AddBias) {
  std::mt19937 rng(12);
  const int32_t n = 5, width = 37;
  const std::vector<float> y0 = randomVector(rng, size_t(n) * width), bias = randomVector(rng, width);
  std::vector<float> y = y0;
  kiln_uk_add_bias(y.data(), bias.data(), n, width);
  for (int32_t t = 0; t < n; ++t)
    for (int32_t i = 0; i < width; ++i)
      ASSERT_EQ(y[size_t(t) * width + i], y0[size_t(t) * width + i] + bias[size_t(i)]);
  kiln_uk_add_bias(nullptr, bias.data(), 0, width); // no rows: touches nothing
}

// ---------------------------------------------------------------------------------------
// kiln_uk_expf against the correctly rounded e^x, over a dense sweep of float bit patterns.

int64_t ulpDistance(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t(INT32_MIN) - int64_t(i) : int64_t(i);
  };
  return std::llabs(key(a) - key(b));
}

TEST_F(UkernelExpf, AccuracyAndSpecials) {
  int64_t worst = 0;
  float worstX = 0;
  auto check = [&](float x) {
    const float want = float(std::exp(double(x)));
    const int64_t d = ulpDistance(kiln_uk_expf(x), want);
    if (d > worst)
      worst = d, worstX = x;
  };
  // every 61st float of [-104, 89], which covers the subnormal and overflow boundaries
  for (uint32_t b = 0; b <= 0x42D00000u; b += 61) {
    float x;
    std::memcpy(&x, &b, 4);
    if (x <= 89.0f)
      check(x);
    check(-x);
  }
  std::printf("[max-error] expf: %lld ulp (at x = %.9g)\n", (long long)worst, double(worstX));
  EXPECT_LE(worst, 2) << "at x = " << worstX;

  EXPECT_EQ(kiln_uk_expf(0.0f), 1.0f);
  EXPECT_EQ(kiln_uk_expf(-0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(kiln_uk_expf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(kiln_uk_expf(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(kiln_uk_expf(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(kiln_uk_expf(88.8f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(kiln_uk_expf(1000.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isfinite(kiln_uk_expf(88.7228f)));
  EXPECT_EQ(kiln_uk_expf(-104.0f), 0.0f);
  EXPECT_EQ(kiln_uk_expf(-1000.0f), 0.0f);
  EXPECT_GT(kiln_uk_expf(-103.0f), 0.0f); // a subnormal
}

} // namespace
