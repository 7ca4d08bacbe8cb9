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
#include "dialects/kiln/IR/KvFormat.h"
#include "compiler/eval/OpKernels.h"
#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "kiln/quant_packed.h"
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
      format == KILN_GGML_TYPE_Q8_0 || format == KILN_TYPE_Q3_0 ? int64_t(rowBytes)
                                                                : int64_t((rowBytes + 15) / 16 * 16);
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

// kiln's q3_0: exact decoding too; 8/24/40 end inside the 8-element groups of qs bytes.
TEST_F(UkernelLinear, Q3_0) {
  static MaxError maxErr("linear q3_0 (|err| / sum|x w|)");
  for (int32_t n : {1, 3, 17})
    for (int32_t in : {7, 8, 16, 24, 32, 40, 64, 172, 256})
      for (int32_t out : {1, 5, 64, 512})
        checkLinear(KILN_TYPE_Q3_0, n, in, out, 1e-4, maxErr);
}

// ggml's K-quants, decoded exactly from their 256-element super-blocks: 7 and 172 end in
// the first super-block's padding, 300 in the second's; 96 and 160 split a q6_K half (the
// four 32-element groups of 128) and a q4_K/q5_K nibble pair.
TEST_F(UkernelLinear, KQuants) {
  static MaxError maxErr("linear q4_K/q5_K/q6_K (|err| / sum|x w|)");
  for (uint32_t format : {uint32_t(KILN_GGML_TYPE_Q4_K), uint32_t(KILN_GGML_TYPE_Q5_K),
                          uint32_t(KILN_GGML_TYPE_Q6_K)})
    for (int32_t n : {1, 3, 17})
      for (int32_t in : {7, 96, 160, 172, 256, 300, 512})
        for (int32_t out : {1, 5, 64})
          checkLinear(format, n, in, out, 1e-4, maxErr);
}

// A larger decode and prefill shape (several 8-row tiles per task, 4096-wide rows as in a
// 7B layer's K dimension, kept short in out so the test stays fast).
TEST_F(UkernelLinear, Int4WideRows) {
  static MaxError maxErr("linear q4 in=4096 (|err| / sum|x w|)");
  for (uint32_t format : {uint32_t(KILN_GGML_TYPE_Q4_0), uint32_t(KILN_GGML_TYPE_Q4_1),
                          uint32_t(KILN_TYPE_Q3_0), uint32_t(KILN_GGML_TYPE_Q4_K),
                          uint32_t(KILN_GGML_TYPE_Q6_K)})
    for (int32_t n : {1, 3})
      checkLinear(format, n, 4096, 37, 1e-4, maxErr);
}

// A format id the lowering never passes (a repacked id, an unknown one) leaves y as it was:
// before, any unlisted id ran the q8_0 loop over bytes of another layout.
TEST_F(UkernelLinear, UnsupportedFormatIsIgnored) {
  const int32_t n = 2, in = 64, out = 40;
  std::vector<float> x(size_t(n) * size_t(in), 1.0f), y(size_t(n) * size_t(out), -3.0f);
  std::vector<uint8_t> w(size_t(out) * 256, 0x11);
  Ctx two(2);
  for (uint32_t format : {uint32_t(KILN_TYPE_Q8_0_R16), uint32_t(7), 12345u}) {
    SCOPED_TRACE(format);
    kiln_uk_linear(&two.ctx, format, x.data(), n, in, w.data(), 256, out, y.data());
    EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == -3.0f; }));
    EXPECT_EQ(two.calls(), 0);
  }
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
// linear_fused: the epilogue only places (or combines) what kiln_uk_linear computes, so
// every output is bit-equal to the plain kernel's value put through the same float steps,
// with 1, 2 or 3 threads (SwiGLU tasks split on gate/up row pairs).

void checkLinearFused(uint32_t format, int32_t n, int32_t in) {
  SCOPED_TRACE(std::string(formatName(format)) + " n=" + std::to_string(n) +
               " in=" + std::to_string(in));
  std::mt19937 rng(uint32_t(n * 7919 + in * 31 + format));
  const int32_t w0 = 13, w1 = 5, w2 = 9, rows = w0 + w1 + w2; // odd: segments split tiles
  const Weights w = makeWeights(rng, format, rows, in);
  std::vector<float> x = randomVector(rng, size_t(n) * size_t(in) + 16, 1.5f);
  std::fill(x.begin() + ptrdiff_t(n) * in, x.end(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> z(size_t(n) * rows);
  Ctx serial(1);
  kiln_uk_linear(&serial.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, rows, z.data());
  auto zAt = [&](int32_t t, int32_t r) { return z[size_t(t) * rows + size_t(r)]; };

  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    Ctx c(threads);
    // Output segments.
    std::vector<float> y0(size_t(n) * w0), y1(size_t(n) * w1), y2(size_t(n) * w2);
    kiln_uk_linear_fused(&c.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, rows,
                         y0.data(), w0, y1.data(), w1, y2.data(), w2, nullptr, 0);
    for (int32_t t = 0; t < n; ++t) {
      for (int32_t r = 0; r < w0; ++r)
        ASSERT_EQ(y0[size_t(t) * w0 + r], zAt(t, r)) << "q segment " << t << "," << r;
      for (int32_t r = 0; r < w1; ++r)
        ASSERT_EQ(y1[size_t(t) * w1 + r], zAt(t, w0 + r)) << "k segment " << t << "," << r;
      for (int32_t r = 0; r < w2; ++r)
        ASSERT_EQ(y2[size_t(t) * w2 + r], zAt(t, w0 + w1 + r)) << "v segment " << t << "," << r;
    }
    // Residual, into a separate buffer and in place.
    const std::vector<float> res = randomVector(rng, size_t(n) * rows, 2.0f);
    std::vector<float> y(res.size()), inPlace = res;
    kiln_uk_linear_fused(&c.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, rows,
                         y.data(), rows, nullptr, 0, nullptr, 0, res.data(), 0);
    kiln_uk_linear_fused(&c.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, rows,
                         inPlace.data(), rows, nullptr, 0, nullptr, 0, inPlace.data(), 0);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], z[i] + res[i]) << "residual element " << i;
    EXPECT_TRUE(bitEqual(y, inPlace)) << "the in-place residual differs";
    // SwiGLU over rows - 1 rows (an even count): gate 2j, up 2j + 1.
    const int32_t f = (rows - 1) / 2;
    std::vector<float> s(size_t(n) * f, -3.0f);
    kiln_uk_linear_fused(&c.ctx, format, x.data(), n, in, w.bytes.data(), w.rowStride, 2 * f,
                         s.data(), f, nullptr, 0, nullptr, 0, nullptr, 1);
    for (int32_t t = 0; t < n; ++t)
      for (int32_t j = 0; j < f; ++j) {
        float g = zAt(t, 2 * j), silu;
        kiln_uk_silu(&g, 1, &silu);
        ASSERT_EQ(s[size_t(t) * f + j], silu * zAt(t, 2 * j + 1)) << "swiglu " << t << "," << j;
      }
  }
}

TEST_F(UkernelLinear, FusedSegmentsResidualSwiGlu) {
  for (uint32_t format : {uint32_t(KILN_GGML_TYPE_F32), uint32_t(KILN_GGML_TYPE_F16),
                          uint32_t(KILN_GGML_TYPE_Q8_0), uint32_t(KILN_GGML_TYPE_Q4_0),
                          uint32_t(KILN_GGML_TYPE_Q4_1), uint32_t(KILN_TYPE_Q3_0),
                          uint32_t(KILN_GGML_TYPE_Q4_K), uint32_t(KILN_GGML_TYPE_Q5_K),
                          uint32_t(KILN_GGML_TYPE_Q6_K)})
    for (int32_t n : {1, 3, 17})
      for (int32_t in : {7, 64, 172, 4096})
        checkLinearFused(format, n, in);
}

// ---------------------------------------------------------------------------------------
// embed: decoding is exact, so the rows must be bit-identical to the reference's.

TEST_F(UkernelEmbed, AllFormatsExact) {
  for (uint32_t format : {uint32_t(KILN_GGML_TYPE_F32), uint32_t(KILN_GGML_TYPE_F16),
                          uint32_t(KILN_GGML_TYPE_Q8_0), uint32_t(KILN_GGML_TYPE_Q4_0),
                          uint32_t(KILN_GGML_TYPE_Q4_1), uint32_t(KILN_TYPE_Q3_0),
                          uint32_t(KILN_GGML_TYPE_Q4_K), uint32_t(KILN_GGML_TYPE_Q5_K),
                          uint32_t(KILN_GGML_TYPE_Q6_K)})
    for (int32_t dim : {7, 32, 48, 64, 172, 300}) {
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
      const uint8_t *wb = reinterpret_cast<const uint8_t *>(wv.data());
      kiln_uk_rms_norm(KILN_GGML_TYPE_F32, x.data(), wb, n, dim, eps, out.data());
      std::vector<float> inPlace = x; // out may alias x
      kiln_uk_rms_norm(KILN_GGML_TYPE_F32, inPlace.data(), wb, n, dim, eps, inPlace.data());
      EXPECT_TRUE(bitEqual(out, inPlace));
      // An f16 scale gives the same result as its exact f32 decoding.
      std::vector<uint16_t> wh(wv.size());
      std::vector<float> whf(wv.size());
      for (size_t i = 0; i < wv.size(); ++i)
        whf[i] = kiln_fp16_to_fp32(wh[i] = kiln_fp32_to_fp16(wv[i]));
      std::vector<float> outH(x.size()), outHf(x.size());
      kiln_uk_rms_norm(KILN_GGML_TYPE_F16, x.data(), reinterpret_cast<const uint8_t *>(wh.data()),
                       n, dim, eps, outH.data());
      kiln_uk_rms_norm(KILN_GGML_TYPE_F32, x.data(),
                       reinterpret_cast<const uint8_t *>(whf.data()), n, dim, eps, outHf.data());
      EXPECT_TRUE(bitEqual(outH, outHf));
      // No weight (kiln.rms_normalize) is the reference with a weight of ones.
      Matrix wantPlain;
      kiln::rmsNorm(toMatrix(x, n, dim), Matrix::Ones(1, dim), eps, wantPlain);
      std::vector<float> plain(x.size());
      kiln_uk_rms_norm(KILN_GGML_TYPE_F32, x.data(), nullptr, n, dim, eps, plain.data());
      for (size_t i = 0; i < plain.size(); ++i)
        ASSERT_NEAR(plain[i], wantPlain.data()[i], 1e-6 * std::fabs(wantPlain.data()[i]))
            << "unscaled element " << i;
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
// attention: prefill, then decode steps and a second prefill chunk, all through the cache,
// for every KV cache format. The cache the kernel writes, decoded, must equal the
// reference's rounded cache (KvCache::format) bit for bit. Fused RoPE (rotary_dims > 0) is
// checked against the same kernel library's kiln_uk_rope followed by unfused attention:
// equal bits in the output and the cache bytes (rotation order is the only difference).

struct AttentionCase {
  int32_t heads, kvHeads, headDim;
  std::vector<int32_t> map; // empty: kv_head_map = NULL
  int32_t rotaryDims = 0;   // > 0: also run the fused-RoPE kernel against rope + attention
  int32_t rotateHalf = 0;
};

// One layer's cache as the lowering lays it out (planes of K, int8 K scales, V).
struct KernelCache {
  std::vector<uint8_t> k, v;
  std::vector<float> kScales;
  KernelCache(kiln::KvFormat f, int32_t maxCtx, int32_t kvHeads, int32_t headDim) {
    auto bytes = [](kiln::KvElem e) { return e == kiln::KvElem::F32 ? 4 : e == kiln::KvElem::F16 ? 2 : 1; };
    const size_t elems = size_t(maxCtx) * size_t(kvHeads) * size_t(headDim);
    k.assign(elems * size_t(bytes(f.k)), 0xFF); // NaN / -1 where never written
    v.assign(elems * size_t(bytes(f.v)), 0xFF);
    if (f.k == kiln::KvElem::I8)
      kScales.assign(size_t(maxCtx) * size_t(kvHeads), std::numeric_limits<float>::quiet_NaN());
  }
  float *scales() { return kScales.empty() ? nullptr : kScales.data(); }
};

// Element i of row `pos` of a cache plane, decoded to float.
float cacheValue(kiln::KvElem e, const std::vector<uint8_t> &plane, const std::vector<float> &scales,
                 int64_t width, int32_t headDim, int32_t pos, int64_t i) {
  const int64_t at = int64_t(pos) * width + i;
  if (e == kiln::KvElem::F32) {
    float x;
    std::memcpy(&x, plane.data() + at * 4, 4);
    return x;
  }
  if (e == kiln::KvElem::F16) {
    uint16_t h;
    std::memcpy(&h, plane.data() + at * 2, 2);
    return kiln_uk_fp16_to_fp32(h);
  }
  const int64_t heads = width / headDim;
  return float(int8_t(plane[size_t(at)])) * scales[size_t(int64_t(pos) * heads + i / headDim)];
}

void runAttention(const AttentionCase &c, kiln::KvFormat f, MaxError &maxErr) {
  SCOPED_TRACE("kv " + kiln::kvFormatName(f) + " heads " + std::to_string(c.heads) + "/" +
               std::to_string(c.kvHeads) + " head_dim " + std::to_string(c.headDim) +
               " rotary " + std::to_string(c.rotaryDims));
  const int32_t maxCtx = 48;
  const float scale = 1.0f / std::sqrt(float(c.headDim));
  kiln::AttentionParams p{c.heads, c.kvHeads, c.headDim, scale, {}};
  for (int32_t h = 0; h < c.heads; ++h)
    p.kvHeadOf.push_back(c.map.empty() ? h / (c.heads / c.kvHeads) : c.map[size_t(h)]);
  const int32_t qWidth = c.heads * c.headDim, kvWidth = c.kvHeads * c.headDim;
  const uint32_t kf = uint32_t(f.k), vf = uint32_t(f.v);

  kiln::KvCache ref;
  ref.k = Matrix::Zero(maxCtx, kvWidth);
  ref.v = Matrix::Zero(maxCtx, kvWidth);
  ref.format = f;
  // kernel caches: serial unfused, threaded unfused, serial fused
  KernelCache c1(f, maxCtx, c.kvHeads, c.headDim), c2 = c1, c3 = c1;
  // each query head alone (1 head, 1 KV head, its own cache): the ISA kernels attend a KV
  // head's query heads together, which must give the same bits as one at a time
  std::vector<KernelCache> alone(size_t(c.heads), KernelCache(f, maxCtx, 1, c.headDim));
  std::vector<float> scoresAlone(static_cast<size_t>(maxCtx));
  std::vector<float> scores1(size_t(c.heads) * size_t(maxCtx)), scores2 = scores1,
      scores3 = scores1;
  const RopeTables tab = c.rotaryDims ? makeRopeTables(maxCtx, c.rotaryDims, 10000.0f) : RopeTables{};
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
    // what the unfused path attends with: q and k rotated by kiln_uk_rope
    std::vector<float> qr = q, kr = k;
    if (c.rotaryDims) {
      kiln_uk_rope(qr.data(), n, qWidth, c.headDim, c.rotaryDims, c.rotateHalf, pos.data(),
                   tab.cosT.data(), tab.sinT.data());
      kiln_uk_rope(kr.data(), n, kvWidth, c.headDim, c.rotaryDims, c.rotateHalf, pos.data(),
                   tab.cosT.data(), tab.sinT.data());
    }
    Matrix want;
    std::string error;
    ASSERT_TRUE(kiln::attention(toMatrix(qr, n, qWidth), toMatrix(kr, n, kvWidth),
                                toMatrix(v, n, kvWidth), pos, p, ref, want, error))
        << error;
    const int32_t *map = c.map.empty() ? nullptr : c.map.data();
    std::vector<float> out1(size_t(n) * size_t(qWidth)), out2(out1.size()), out3(out1.size());
    kiln_uk_attention(&serial.ctx, qr.data(), kr.data(), v.data(), n, pos.data(), c.heads,
                      c.kvHeads, c.headDim, scale, map, kf, vf, c1.k.data(), c1.scales(),
                      c1.v.data(), maxCtx, 0, 0, nullptr, nullptr, scores1.data(), out1.data());
    kiln_uk_attention(&two.ctx, qr.data(), kr.data(), v.data(), n, pos.data(), c.heads,
                      c.kvHeads, c.headDim, scale, map, kf, vf, c2.k.data(), c2.scales(),
                      c2.v.data(), maxCtx, 0, 0, nullptr, nullptr, scores2.data(), out2.data());
    EXPECT_TRUE(bitEqual(out1, out2)) << "2 threads changed the result";
    for (int32_t h = 0; h < c.heads; ++h) {
      const int32_t g = p.kvHeadOf[size_t(h)];
      std::vector<float> qh, kh, vh, outh(size_t(n) * size_t(c.headDim)), grouped;
      for (int32_t t = 0; t < n; ++t) {
        const size_t qAt = size_t(t) * size_t(qWidth) + size_t(h) * size_t(c.headDim);
        const size_t kvAt = size_t(t) * size_t(kvWidth) + size_t(g) * size_t(c.headDim);
        qh.insert(qh.end(), qr.begin() + long(qAt), qr.begin() + long(qAt) + c.headDim);
        kh.insert(kh.end(), kr.begin() + long(kvAt), kr.begin() + long(kvAt) + c.headDim);
        vh.insert(vh.end(), v.begin() + long(kvAt), v.begin() + long(kvAt) + c.headDim);
        grouped.insert(grouped.end(), out1.begin() + long(qAt), out1.begin() + long(qAt) + c.headDim);
      }
      KernelCache &ch = alone[size_t(h)];
      kiln_uk_attention(&serial.ctx, qh.data(), kh.data(), vh.data(), n, pos.data(), 1, 1,
                        c.headDim, scale, nullptr, kf, vf, ch.k.data(), ch.scales(), ch.v.data(),
                        maxCtx, 0, 0, nullptr, nullptr, scoresAlone.data(), outh.data());
      EXPECT_TRUE(bitEqual(grouped, outh)) << "head " << h << " differs from attending it alone";
    }
    if (c.rotaryDims) {
      kiln_uk_attention(&serial.ctx, q.data(), k.data(), v.data(), n, pos.data(), c.heads,
                        c.kvHeads, c.headDim, scale, map, kf, vf, c3.k.data(), c3.scales(),
                        c3.v.data(), maxCtx, c.rotaryDims, c.rotateHalf, tab.cosT.data(),
                        tab.sinT.data(), scores3.data(), out3.data());
      EXPECT_TRUE(bitEqual(out1, out3)) << "fused RoPE differs from rope + attention";
      EXPECT_TRUE(c1.k == c3.k && c1.v == c3.v && bitEqual(c1.kScales, c3.kScales))
          << "fused RoPE stored a different cache";
    }
    // the cache rows written so far, decoded, equal the reference's rounded rows
    for (int32_t r = 0; r < next; ++r)
      for (int64_t i = 0; i < kvWidth; ++i) {
        ASSERT_EQ(cacheValue(f.k, c1.k, c1.kScales, kvWidth, c.headDim, r, i), ref.k(r, i))
            << "K row " << r << " element " << i;
        ASSERT_EQ(cacheValue(f.v, c1.v, c1.kScales, kvWidth, c.headDim, r, i), ref.v(r, i))
            << "V row " << r << " element " << i;
      }
    // outputs are convex combinations of V rows (|v| <= 1): absolute error. int8 K is dotted
    // as integers and scaled once, so its scores round differently from q . (k8 * s).
    const double bound = f.k == kiln::KvElem::I8 ? 1e-5 : 2e-6;
    for (size_t i = 0; i < out1.size(); ++i) {
      const double err = std::fabs(double(out1[i]) - double(want.data()[i]));
      ASSERT_LE(err, bound) << "element " << i << ": " << out1[i] << " vs " << want.data()[i];
      maxErr.update(err);
    }
  }
  // the last step's 2 * (24 + ... + 43) * heads * head_dim multiply-adds reach the kernel's
  // parallel threshold (1 << 15) from heads * head_dim = 32 on
  if (qWidth >= 32) {
    EXPECT_GT(two.calls(), 0) << "the 20-token step should run in parallel";
  }
}

const kiln::KvFormat kKvFormats[] = {
    {kiln::KvElem::F32, kiln::KvElem::F32}, {kiln::KvElem::F16, kiln::KvElem::F16},
    {kiln::KvElem::I8, kiln::KvElem::F16},  {kiln::KvElem::I8, kiln::KvElem::F32},
    {kiln::KvElem::F32, kiln::KvElem::F16}};

TEST_F(UkernelAttention, GqaDefaultMap) {
  static MaxError maxErr("attention GQA, map NULL (abs, |v| <= 1)");
  for (kiln::KvFormat f : kKvFormats) {
    runAttention({8, 2, 16, {}}, f, maxErr);
    runAttention({6, 3, 20, {}}, f, maxErr); // head_dim not a multiple of 8
    runAttention({4, 2, 6, {}}, f, maxErr);  // head_dim below one 8-lane block
    runAttention({32, 4, 64, {}}, f, maxErr); // TinyLlama's: groups of 8 query heads
    runAttention({12, 1, 16, {}}, f, maxErr); // one KV head: a group of 8, then of 4
  }
}

TEST_F(UkernelAttention, GqaExplicitMap) {
  static MaxError maxErr("attention GQA, kv_head_map (abs, |v| <= 1)");
  for (kiln::KvFormat f : kKvFormats) {
    runAttention({6, 2, 16, {1, 1, 0, 0, 1, 0}}, f, maxErr);
    runAttention({4, 4, 12, {3, 2, 1, 0}}, f, maxErr);
  }
}

TEST_F(UkernelAttention, MultiHead) {
  static MaxError maxErr("attention MHA (abs, |v| <= 1)");
  for (kiln::KvFormat f : kKvFormats)
    runAttention({4, 4, 8, {}}, f, maxErr);
}

TEST_F(UkernelAttention, FusedRope) {
  static MaxError maxErr("attention with fused RoPE (abs, |v| <= 1)");
  for (kiln::KvFormat f : kKvFormats) {
    runAttention({8, 4, 8, {}, 8, 0}, f, maxErr);                  // stories260K's shape
    runAttention({6, 3, 20, {}, 12, 1}, f, maxErr);                // partial, rotate-half
    runAttention({6, 2, 16, {1, 1, 0, 0, 1, 0}, 16, 0}, f, maxErr); // with a head map
  }
}

TEST_F(UkernelAttention, Fp16RoundTrip) {
  // kiln_uk_fp32_to_fp16 rounds as Eigen::half (the reference's f16 cache) for normals,
  // subnormals, overflow and ties.
  std::mt19937 rng(5);
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 1e6f, -1e6f, 6e-8f, 3e-8f,
                           2.98023224e-8f, 5.96046448e-8f, 1.00048828125f, 1.0009765625f,
                           std::numeric_limits<float>::infinity()};
  std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
  std::uniform_real_distribution<float> small(-1e-4f, 1e-4f);
  for (int i = 0; i < 100000; ++i) {
    xs.push_back(u(rng));
    xs.push_back(small(rng));
  }
  for (float x : xs) {
    const uint16_t got = kiln_uk_fp32_to_fp16(x);
    const Eigen::half want(x);
    ASSERT_EQ(got, Eigen::numext::bit_cast<uint16_t>(want)) << "x = " << x;
  }
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
