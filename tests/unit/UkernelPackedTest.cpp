// Differential tests of kiln_uk_linear_packed (the r16 and r32 repacked formats,
// kiln/quant_packed.h),
// built into every kernel library's test binary (generic, x86-64-v3, x86-64-v4, v4 + VNNI,
// v3 + AVX-VNNI, NEON with dotprod and with i8mm).
//
// Weights are quantised with runtime-min's ggml quantizers and repacked with
// kiln_repack_packed. Two references:
// - the same int8-activation math in double, with x quantised here independently (ggml's
//   q8_0 rule: d = amax/127, round half to even): y = sum_i w_i * d_x(i) * q_i. Bound
//   4e-6 * sum_i |w_i x^_i|: the integer dots are exact, what is left is float rounding of
//   one term per block and its accumulation (64 blocks at in = 2048);
// - the fp32 reference x * dequantize(W)^T. Quantising x moves each element by at most
//   d_x/2, so the stated bound is sum_blocks d_x/2 * sum_i |w_i| (times 1.0001), plus
//   1e-5 * sum_i |x_i w_i|.
// Serial and threaded runs must be bit-identical; nothing past y's n * out floats is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "packed_common.h" // KILN_UK_PACKED_PARALLEL_MIN_WORK
#include "kiln/quant.h"
#include "kiln/quant_packed.h"
#include "ukernel_abi.h"
#include "UkernelTestSupport.h"

namespace {

class UkernelPacked : public ::testing::Test {
protected:
  void SetUp() override {
    if (!isaSupported())
      GTEST_SKIP() << "this CPU cannot run the " << KILN_UK_TEST_ISA << " kernels";
  }
};

struct PackedWeights {
  uint32_t packed = 0;
  int64_t groupStride = 0;
  std::vector<uint8_t> bytes;
  std::vector<float> deq; // [rows, cols]
};

// Rows of different magnitudes (so scales differ), quantised with ggml's algorithm into
// zero-padded 32-blocks, then repacked.
PackedWeights makePacked(std::mt19937 &rng, uint32_t base, int32_t rows, int32_t cols,
                         uint32_t groupRows = 16) {
  PackedWeights w;
  w.packed = kiln_packed_type(base, groupRows);
  const int32_t padded = (cols + 31) / 32 * 32;
  uint64_t rowBytes = 0;
  EXPECT_EQ(kiln_ggml_row_bytes(base, uint64_t(padded), &rowBytes), KILN_STATUS_OK);
  std::vector<uint8_t> ggml(rowBytes * size_t(rows));
  std::vector<float> row(size_t(padded), 0.0f), dec(static_cast<size_t>(padded));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  w.deq.resize(size_t(rows) * size_t(cols));
  const bool withMin = base == KILN_GGML_TYPE_Q4_1 || base == KILN_GGML_TYPE_Q4_K ||
                       base == KILN_GGML_TYPE_Q5_K; // formats with a minimum: offset rows
  for (int32_t r = 0; r < rows; ++r) {
    const float scale = 0.05f + 2.0f * float(r % 7) / 7.0f;
    std::fill(row.begin(), row.end(), 0.0f);
    for (int32_t i = 0; i < cols; ++i)
      row[size_t(i)] = u(rng) * scale + (withMin ? 0.3f * scale : 0.0f);
    uint8_t *dst = ggml.data() + size_t(r) * rowBytes;
    EXPECT_EQ(kiln_quantize(base, row.data(), dst, uint64_t(padded)), KILN_STATUS_OK);
    EXPECT_EQ(kiln_dequantize(base, dst, dec.data(), uint64_t(padded)), KILN_STATUS_OK);
    std::copy(dec.begin(), dec.begin() + cols, w.deq.begin() + ptrdiff_t(r) * cols);
  }
  w.groupStride = int64_t(kiln_packed_group_bytes(w.packed, uint64_t(padded)));
  w.bytes.assign(size_t(w.groupStride) * size_t((rows + groupRows - 1) / groupRows), 0xAB);
  EXPECT_EQ(kiln_repack_packed(w.packed, ggml.data(), rowBytes, uint64_t(rows), uint64_t(padded),
                            w.bytes.data()),
            KILN_STATUS_OK);
  return w;
}

// ggml's q8_0 rule on one token, independent of the kernels' code: x^ = d * q per block.
void quantizeRef(const float *x, int32_t in, std::vector<double> &xhat, std::vector<double> &half) {
  xhat.assign(size_t(in), 0.0);
  half.assign(size_t((in + 31) / 32), 0.0);
  for (int32_t b = 0; b * 32 < in; ++b) {
    const int32_t count = std::min(32, in - b * 32);
    float amax = 0.0f;
    for (int32_t j = 0; j < count; ++j)
      amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int32_t j = 0; j < count; ++j) {
      const float v = x[b * 32 + j] * id;
      xhat[size_t(b * 32 + j)] = double(d) * double(std::nearbyint(v));
    }
    half[size_t(b)] = double(d) / 2.0;
  }
}

struct MaxErr {
  const char *what;
  double value = 0;
  explicit MaxErr(const char *w) : what(w) {}
  ~MaxErr() {
    std::printf("[max-error] %s %s: %.3g\n", KILN_UK_TEST_ISA[0] ? KILN_UK_TEST_ISA : "generic",
                what, value);
  }
};

void checkPacked(uint32_t base, uint32_t groupRows, int32_t n, int32_t in, int32_t out,
                 MaxErr &tight, MaxErr &loose) {
  SCOPED_TRACE(std::string(kiln_ggml_type_name(base)) + "_r" + std::to_string(groupRows) +
               " n=" + std::to_string(n) + " in=" + std::to_string(in) +
               " out=" + std::to_string(out));
  std::mt19937 rng(uint32_t(n * 1000003 + in * 1009 + out * 7 + base));
  const PackedWeights w = makePacked(rng, base, out, in, groupRows);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  // NaN after the last token: reading x past `in` would poison a block's scale
  std::vector<float> x(size_t(n) * size_t(in) + 16, std::numeric_limits<float>::quiet_NaN());
  for (size_t i = 0; i < size_t(n) * size_t(in); ++i)
    x[i] = u(rng) * (i % 97 == 0 ? 8.0f : 1.0f); // a few outliers per row set block scales
  std::vector<uint8_t> scratch(size_t(n) * kiln_packed_act_stride(uint64_t(in)) + 64);
  uint8_t *qs = scratch.data() + (64 - uintptr_t(scratch.data()) % 64) % 64;

  Ctx serial(1), two(2), three(3);
  const size_t ny = size_t(n) * size_t(out);
  std::vector<float> y1(ny + 8, -7.0f), y2(ny + 8, -8.0f), y3(ny + 8, -9.0f);
  kiln_uk_linear_packed(&serial.ctx, w.packed, x.data(), n, in, w.bytes.data(), w.groupStride,
                        out, y1.data(), qs, 0);
  kiln_uk_linear_packed(&two.ctx, w.packed, x.data(), n, in, w.bytes.data(), w.groupStride, out,
                        y2.data(), qs, 0);
  kiln_uk_linear_packed(&three.ctx, w.packed, x.data(), n, in, w.bytes.data(), w.groupStride,
                        out, y3.data(), qs, 0);
  for (size_t i = ny; i < ny + 8; ++i)
    ASSERT_EQ(y1[i], -7.0f) << "wrote past y's " << ny << " floats";
  y1.resize(ny), y2.resize(ny), y3.resize(ny);
  EXPECT_TRUE(std::memcmp(y1.data(), y2.data(), ny * 4) == 0) << "2 threads changed the result";
  EXPECT_TRUE(std::memcmp(y1.data(), y3.data(), ny * 4) == 0) << "3 threads changed the result";
  const bool large = int64_t(n) * in * out >= KILN_UK_PACKED_PARALLEL_MIN_WORK;
  EXPECT_EQ(two.calls() > 0, large && out > int32_t(groupRows))
      << "parallel_for use does not follow the work";

  std::vector<double> xhat, half;
  for (int32_t t = 0; t < n; ++t) {
    const float *xt = x.data() + size_t(t) * size_t(in);
    quantizeRef(xt, in, xhat, half);
    for (int32_t o = 0; o < out; ++o) {
      const float *wr = w.deq.data() + size_t(o) * size_t(in);
      double ref8 = 0, mag8 = 0, ref32 = 0, mag32 = 0, bound = 0;
      for (int32_t i = 0; i < in; ++i) {
        ref8 += double(wr[i]) * xhat[size_t(i)];
        mag8 += std::fabs(double(wr[i]) * xhat[size_t(i)]);
        ref32 += double(wr[i]) * double(xt[i]);
        mag32 += std::fabs(double(wr[i]) * double(xt[i]));
        bound += std::fabs(double(wr[i])) * half[size_t(i / 32)];
      }
      const double got = y1[size_t(t) * size_t(out) + size_t(o)];
      ASSERT_TRUE(std::isfinite(got)) << "y[" << t << "," << o << "] = " << got;
      const double e8 = std::fabs(got - ref8) / std::max(mag8, 1e-30);
      ASSERT_LE(e8, 4e-6) << "y[" << t << "," << o << "] = " << got << ", int8 math wants "
                          << ref8;
      tight.value = std::max(tight.value, e8);
      const double allowed = 1.0001 * bound + 1e-5 * mag32;
      ASSERT_LE(std::fabs(got - ref32), allowed)
          << "y[" << t << "," << o << "] = " << got << ", fp32 reference " << ref32;
      loose.value = std::max(loose.value, std::fabs(got - ref32) / std::max(allowed, 1e-30));
    }
  }
}

void runShapes(uint32_t base, MaxErr &tight, MaxErr &loose, uint32_t groupRows = 16) {
  // n: decode; sdot tiles of 2 + 1; (i8mm builds) usmmla tiles of 4 + 2, + 1, and many
  for (int32_t n : {1, 3, 6, 17, 64})
    for (int32_t in : {7, 32, 160, 172, 256, 2048}) // 1, 1, 5 (odd: a half unit), 6, 8, 64 blocks
      for (int32_t out : {1, 5, 64, 512}) {
        checkPacked(base, groupRows, n, in, out, tight, loose);
        if (::testing::Test::HasFatalFailure())
          return;
      }
  // A decode step large enough to run in tasks on 2 and 3 threads: 133 r16 groups, so the
  // x86 decode's lanes (PACKED_DECODE_LANES) are cut between tasks and a group is left past
  // them, and the last group is partial.
  checkPacked(base, groupRows, 1, 2048, 2116, tight, loose);
  // Prefills with wide rows: AMX (x86/linear_packed.c) takes 69 tokens of 8192 inputs in two
  // chunks of token tiles (3 + 1 tiles, then 5 tokens by vpdpbusd), and leaves rows of
  // 24608 inputs (769 blocks, one past AMX_SCALES / 16) to the vpdpbusd tiles.
  checkPacked(base, groupRows, 69, 8192, 40, tight, loose);
  checkPacked(base, groupRows, 17, 24608, 20, tight, loose);
}

// The K-quants' rows are whole 256-element super-blocks: 1, 3 (q6_K's odd count: a unit
// of one super-block and half a header) and 8 of them.
void runKShapes(uint32_t base, MaxErr &tight, MaxErr &loose) {
  for (int32_t n : {1, 3, 9, 17})
    for (int32_t in : {256, 768, 2048})
      for (int32_t out : {1, 16, 37, 64}) {
        checkPacked(base, 16, n, in, out, tight, loose);
        if (::testing::Test::HasFatalFailure())
          return;
      }
  checkPacked(base, 16, 1, 2048, 2116, tight, loose); // decode in tasks on 2 and 3 threads
  checkPacked(base, 16, 69, 8192, 40, tight, loose);
}

TEST_F(UkernelPacked, Q4_K) {
  static MaxErr tight("linear q4_K_r16 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q4_K_r16 vs fp32 (|err| / bound)");
  runKShapes(KILN_GGML_TYPE_Q4_K, tight, loose);
}

TEST_F(UkernelPacked, Q5_K) {
  static MaxErr tight("linear q5_K_r16 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q5_K_r16 vs fp32 (|err| / bound)");
  runKShapes(KILN_GGML_TYPE_Q5_K, tight, loose);
}

TEST_F(UkernelPacked, Q6_K) {
  static MaxErr tight("linear q6_K_r16 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q6_K_r16 vs fp32 (|err| / bound)");
  runKShapes(KILN_GGML_TYPE_Q6_K, tight, loose);
}

TEST_F(UkernelPacked, Q4_0) {
  static MaxErr tight("linear q4_0_r16 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q4_0_r16 vs fp32 (|err| / bound)");
  runShapes(KILN_GGML_TYPE_Q4_0, tight, loose);
}

TEST_F(UkernelPacked, Q4_1) {
  static MaxErr tight("linear q4_1_r16 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q4_1_r16 vs fp32 (|err| / bound)");
  runShapes(KILN_GGML_TYPE_Q4_1, tight, loose);
}

TEST_F(UkernelPacked, Q8_0) {
  static MaxErr tight("linear q8_0_r16 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q8_0_r16 vs fp32 (|err| / bound)");
  runShapes(KILN_GGML_TYPE_Q8_0, tight, loose);
}

// The r32 formats (Hexagon's layout): the HVX kernel for q4_0/q8_0, the portable code on
// every other library.
TEST_F(UkernelPacked, Q4_0_R32) {
  static MaxErr tight("linear q4_0_r32 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q4_0_r32 vs fp32 (|err| / bound)");
  runShapes(KILN_GGML_TYPE_Q4_0, tight, loose, 32);
}

TEST_F(UkernelPacked, Q4_1_R32) {
  static MaxErr tight("linear q4_1_r32 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q4_1_r32 vs fp32 (|err| / bound)");
  runShapes(KILN_GGML_TYPE_Q4_1, tight, loose, 32);
}

TEST_F(UkernelPacked, Q8_0_R32) {
  static MaxErr tight("linear q8_0_r32 vs int8 math (|err| / sum|w x^|)");
  static MaxErr loose("linear q8_0_r32 vs fp32 (|err| / bound)");
  runShapes(KILN_GGML_TYPE_Q8_0, tight, loose, 32);
}


// A format id that is not a repacked one (the lowering never passes one) has no row groups:
// both entry points return without touching y or the scratch, instead of dividing by zero
// rows or running another format's loop over the bytes.
TEST_F(UkernelPacked, NonPackedFormatIsIgnored) {
  const int32_t n = 2, in = 64, out = 32;
  std::vector<float> x(size_t(n) * size_t(in), 1.0f), y(size_t(n) * size_t(out), -3.0f);
  std::vector<uint8_t> w(4096, 0x11), scratch(4096, 0x5A);
  Ctx two(2);
  for (uint32_t format : {uint32_t(KILN_GGML_TYPE_Q8_0), uint32_t(KILN_GGML_TYPE_F32), 12345u}) {
    SCOPED_TRACE(format);
    kiln_uk_linear_packed(&two.ctx, format, x.data(), n, in, w.data(), 1024, out, y.data(),
                          scratch.data(), 0);
    kiln_uk_linear_packed_fused(&two.ctx, format, x.data(), n, in, w.data(), 1024, out, y.data(),
                                out, nullptr, 0, nullptr, 0, nullptr, 0, scratch.data(), 0);
    EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == -3.0f; }));
    EXPECT_TRUE(std::all_of(scratch.begin(), scratch.end(), [](uint8_t v) { return v == 0x5A; }));
    EXPECT_EQ(two.calls(), 0);
  }
}
// Extreme codes: q8 weights of +-127 against activations of +-127 in every lane (the
// maddubs fallback would saturate int16 pairs on biased codes), q4 codes 0 and 15.
TEST_F(UkernelPacked, ExtremeCodesDoNotSaturate) {
  for (uint32_t base : {uint32_t(KILN_GGML_TYPE_Q8_0), uint32_t(KILN_GGML_TYPE_Q4_0)}) {
    const int32_t rows = 16, in = 64;
    std::vector<float> row(static_cast<size_t>(in));
    uint64_t rowBytes = 0;
    ASSERT_EQ(kiln_ggml_row_bytes(base, uint64_t(in), &rowBytes), KILN_STATUS_OK);
    std::vector<uint8_t> ggml(rowBytes * rows);
    std::vector<float> deq(size_t(rows) * size_t(in));
    for (int32_t r = 0; r < rows; ++r) {
      for (int32_t i = 0; i < in; ++i)
        row[size_t(i)] = ((i + r) % 2 ? 1.0f : -1.0f) * (r % 2 ? 1.0f : 0.875f);
      ASSERT_EQ(kiln_quantize(base, row.data(), ggml.data() + r * rowBytes, uint64_t(in)),
                KILN_STATUS_OK);
      ASSERT_EQ(kiln_dequantize(base, ggml.data() + r * rowBytes, deq.data() + r * in,
                                uint64_t(in)),
                KILN_STATUS_OK);
    }
    const uint32_t packed = base + 1000u;
    const uint64_t gs = kiln_packed_group_bytes(packed, uint64_t(in));
    std::vector<uint8_t> bytes(gs);
    ASSERT_EQ(kiln_repack_packed(packed, ggml.data(), rowBytes, rows, uint64_t(in), bytes.data()),
              KILN_STATUS_OK);
    std::vector<float> x(static_cast<size_t>(in));
    for (int32_t i = 0; i < in; ++i)
      x[size_t(i)] = i % 2 ? 1.0f : -1.0f; // codes of +-127
    std::vector<uint8_t> qs(kiln_packed_act_stride(uint64_t(in)));
    std::vector<float> y(static_cast<size_t>(rows));
    Ctx serial(1);
    kiln_uk_linear_packed(&serial.ctx, packed, x.data(), 1, in, bytes.data(), int64_t(gs), rows,
                          y.data(), qs.data(), 0);
    for (int32_t r = 0; r < rows; ++r) {
      double want = 0;
      for (int32_t i = 0; i < in; ++i)
        want += double(deq[size_t(r * in + i)]) * double(x[size_t(i)]);
      EXPECT_NEAR(y[size_t(r)], want, 1e-4 * std::fabs(want) + 1e-6)
          << kiln_ggml_type_name(base) << " row " << r;
    }
  }
}

// embed's rows of a table in r16 groups are the ggml rows' values, bit for bit.
void expectEmbedRows(const PackedWeights &w, uint32_t base, int32_t in,
                     const std::vector<int32_t> &ids) {
  std::vector<float> rowsOut(ids.size() * size_t(in));
  Ctx serial(1);
  kiln_uk_embed(&serial.ctx, w.packed, w.bytes.data(), w.groupStride, in, ids.data(),
                int32_t(ids.size()), rowsOut.data());
  for (size_t t = 0; t < ids.size(); ++t)
    for (int32_t i = 0; i < in; ++i)
      ASSERT_EQ(rowsOut[t * size_t(in) + size_t(i)], w.deq[size_t(ids[t] * in + i)])
          << kiln_ggml_type_name(base) << " embed row " << ids[t] << " element " << i;
}

// Packing moves bits only: unpacked rows decode exactly as the ggml rows did, and padding
// rows of the last group are zero.
TEST_F(UkernelPacked, RepackIsLossless) {
  std::mt19937 rng(11);
  for (uint32_t groupRows : {16u, 32u})
  for (uint32_t base : {uint32_t(KILN_GGML_TYPE_Q4_0), uint32_t(KILN_GGML_TYPE_Q4_1),
                        uint32_t(KILN_GGML_TYPE_Q8_0)}) {
    const int32_t rows = 21 + int32_t(groupRows), in = 96;
    const PackedWeights w = makePacked(rng, base, rows, in, groupRows);
    std::vector<float> dec(static_cast<size_t>(in));
    const int32_t stored = (rows + int32_t(groupRows) - 1) / int32_t(groupRows) * int32_t(groupRows);
    for (int32_t r = 0; r < stored; ++r) { // the padding rows of the last group too
      ASSERT_EQ(kiln_dequantize_packed_row(w.packed, w.bytes.data(), uint64_t(r), uint64_t(in),
                                           dec.data()),
                KILN_STATUS_OK);
      for (int32_t i = 0; i < in; ++i)
        ASSERT_EQ(dec[size_t(i)], r < rows ? w.deq[size_t(r * in + i)] : 0.0f)
            << kiln_ggml_type_name(base) << " row " << r << " element " << i;
    }
    if (groupRows == 16) // embed reads a tied r16 table's rows
      expectEmbedRows(w, base, in, {0, rows - 1, 7, 15, 16, 31});
    EXPECT_EQ(kiln_repack_packed(w.packed, w.bytes.data(), 1, 1, 33, dec.data()),
              KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(kiln_repack_packed(KILN_GGML_TYPE_Q4_0, w.bytes.data(), 1, 1, 32, dec.data()),
              KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_STREQ(kiln_format_name(w.packed), (std::string(kiln_ggml_type_name(base)) + "_r" +
                                              std::to_string(groupRows))
                                                 .c_str());
    EXPECT_EQ(kiln_packed_base_type(w.packed), base);
  }
  // q4_K_r16 / q5_K_r16 / q6_K_r16: 1 and 3 super-blocks (q6_K's odd unit)
  for (uint32_t base : {uint32_t(KILN_GGML_TYPE_Q4_K), uint32_t(KILN_GGML_TYPE_Q5_K),
                        uint32_t(KILN_GGML_TYPE_Q6_K)})
    for (int32_t in : {256, 768}) {
      const int32_t rows = 21;
      const PackedWeights w = makePacked(rng, base, rows, in);
      uint64_t rowBytes = 0;
      ASSERT_EQ(kiln_ggml_row_bytes(base, uint64_t(in), &rowBytes), KILN_STATUS_OK);
      const uint64_t odd = base == KILN_GGML_TYPE_Q6_K && in / 256 % 2 ? 32 : 0; // half a header
      EXPECT_EQ(uint64_t(w.groupStride), 16 * rowBytes + odd);
      std::vector<float> dec(static_cast<size_t>(in));
      for (int32_t r = 0; r < 32; ++r) {
        ASSERT_EQ(kiln_dequantize_packed_row(w.packed, w.bytes.data(), uint64_t(r), uint64_t(in),
                                             dec.data()),
                  KILN_STATUS_OK);
        for (int32_t i = 0; i < in; ++i)
          ASSERT_EQ(dec[size_t(i)], r < rows ? w.deq[size_t(r * in + i)] : 0.0f)
              << kiln_ggml_type_name(base) << " row " << r << " element " << i;
      }
      expectEmbedRows(w, base, in, {0, 20, 7, 15, 16}); // a tied table's rows from the groups
      EXPECT_EQ(kiln_repack_packed(w.packed, w.bytes.data(), 1, 1, 288, dec.data()),
                KILN_STATUS_INVALID_ARGUMENT); // not whole super-blocks
      EXPECT_EQ(kiln_packed_type(base, 32), 0u); // no r32 form
      EXPECT_STREQ(kiln_format_name(w.packed),
                   (std::string(kiln_ggml_type_name(base)) + "_r16").c_str());
    }
}

} // namespace

namespace {

// kiln_uk_linear_packed_fused: each store mode against kiln_uk_linear_packed's z put through
// the same float steps (segments and residual bit-exact; SwiGLU's silu within 1e-6), with
// 1 and 3 threads, decode and a prefill tile.
void packedFusedCase(uint32_t base, int32_t n, int32_t in, int32_t rows, uint32_t groupRows) {
  SCOPED_TRACE(std::string(kiln_ggml_type_name(base)) + "_r" + std::to_string(groupRows) +
               " fused n=" + std::to_string(n) + " in=" + std::to_string(in) +
               " rows=" + std::to_string(rows));
  std::mt19937 rng(uint32_t(n * 7919 + in * 31 + rows + base));
  const PackedWeights w = makePacked(rng, base, rows, in, groupRows);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  std::vector<float> x(size_t(n) * size_t(in)), res(size_t(n) * size_t(rows));
  for (float &v : x)
    v = u(rng);
  for (float &v : res)
    v = u(rng);
  std::vector<uint8_t> scratch(size_t(n) * kiln_packed_act_stride(uint64_t(in)) + 64);
  uint8_t *qs = scratch.data() + (64 - uintptr_t(scratch.data()) % 64) % 64;
  Ctx serial(1), three(3);
  std::vector<float> z(size_t(n) * size_t(rows));
  kiln_uk_linear_packed(&serial.ctx, w.packed, x.data(), n, in, w.bytes.data(), w.groupStride,
                        rows, z.data(), qs, 0);
  for (Ctx *c : {&serial, &three}) {
    // three segments: widths 16, rows - 24, 8 (a boundary inside a 16-row group)
    const int32_t w0 = 16, w2 = 8, w1 = rows - w0 - w2;
    std::vector<float> s0(size_t(n) * w0), s1(size_t(n) * w1), s2(size_t(n) * w2);
    kiln_uk_linear_packed_fused(&c->ctx, w.packed, x.data(), n, in, w.bytes.data(),
                                w.groupStride, rows, s0.data(), w0, s1.data(), w1, s2.data(),
                                w2, nullptr, 0, qs, 0);
    for (int32_t t = 0; t < n; ++t)
      for (int32_t r = 0; r < rows; ++r) {
        const float got = r < w0        ? s0[size_t(t) * w0 + r]
                          : r < w0 + w1 ? s1[size_t(t) * w1 + r - w0]
                                        : s2[size_t(t) * w2 + r - w0 - w1];
        ASSERT_EQ(got, z[size_t(t) * rows + r]) << "segment store t=" << t << " r=" << r;
      }
    // residual, in place
    std::vector<float> y = res;
    kiln_uk_linear_packed_fused(&c->ctx, w.packed, x.data(), n, in, w.bytes.data(),
                                w.groupStride, rows, y.data(), rows, nullptr, 0, nullptr, 0,
                                y.data(), 0, qs, 0);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], z[i] + res[i]) << "residual store " << i;
    // SwiGLU over interleaved gate/up rows
    std::vector<float> g(size_t(n) * (rows / 2));
    kiln_uk_linear_packed_fused(&c->ctx, w.packed, x.data(), n, in, w.bytes.data(),
                                w.groupStride, rows, g.data(), rows / 2, nullptr, 0, nullptr, 0,
                                nullptr, 1, qs, 0);
    for (int32_t t = 0; t < n; ++t)
      for (int32_t j = 0; j < rows / 2; ++j) {
        const float gate = z[size_t(t) * rows + 2 * j], up = z[size_t(t) * rows + 2 * j + 1];
        const float want = (gate / (1.0f + std::exp(-gate))) * up;
        ASSERT_NEAR(g[size_t(t) * (rows / 2) + j], want, 1e-6f * (std::fabs(want) + 1e-3f))
            << "swiglu t=" << t << " j=" << j;
      }
  }
}

TEST_F(UkernelPacked, FusedStoreSegmentsResidualSwiGlu) {
  for (uint32_t groupRows : {16u, 32u})
    for (uint32_t base : {KILN_GGML_TYPE_Q4_0, KILN_GGML_TYPE_Q4_1, KILN_GGML_TYPE_Q8_0})
      for (int32_t n : {1, 3, 17})
        for (int32_t in : {32, 172})
          for (int32_t rows : {40, 344})
            ASSERT_NO_FATAL_FAILURE(packedFusedCase(base, n, in, rows, groupRows));
  // decode in tasks on 3 threads (see runShapes); and lanes of 21 groups on one thread, so
  // the x86 decode's held results go through the store step in runs of 8, 8 and 5 groups,
  // the last group partial (SwiGLU needs an even row count)
  for (uint32_t base : {KILN_GGML_TYPE_Q4_0, KILN_GGML_TYPE_Q4_1, KILN_GGML_TYPE_Q8_0}) {
    ASSERT_NO_FATAL_FAILURE(packedFusedCase(base, 1, 2048, 2116, 16));
    ASSERT_NO_FATAL_FAILURE(packedFusedCase(base, 1, 64, 1334, 16));
  }
  for (uint32_t base : {KILN_GGML_TYPE_Q4_K, KILN_GGML_TYPE_Q5_K, KILN_GGML_TYPE_Q6_K})
    for (int32_t n : {1, 3, 17})
      ASSERT_NO_FATAL_FAILURE(packedFusedCase(base, n, 512, 344, 16));
}

} // namespace
