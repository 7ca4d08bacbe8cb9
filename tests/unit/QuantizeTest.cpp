// kiln runtime-min quantizers against llama.cpp: quantizing each record's input from
// $KILN_TESTDATA_DIR/ggml-quant-vectors.bin (format in shared/testdata/README.md) must give
// ggml's bytes exactly for f16, q8_0, q4_0, q4_1, q4_K, q5_K and q6_K (the K-quants search
// their scales, so one float rounding done differently would show here). Also the float -> half conversion: round
// trips of all 65536 halves, round-to-nearest-even ties, overflow, subnormals, and (where
// the CPU has F16C) agreement with vcvtps2ph on a sweep of float bit patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "QuantVectors.h"
#include "TestPaths.h"
#include "kiln/quant.h"
#include "kiln/quant_blocks.h"

namespace {

using kiln::test::VectorFile;
using kiln::test::VectorRecord;
using kiln::test::vectorFile;
using kiln::test::vectorsPath;

[[maybe_unused]] uint32_t bitsOf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

float fromBits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

std::string hex(uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// The formats kiln quantizes exactly as ggml does.
const char *const kQuantFormats[] = {"f16", "q8_0", "q4_0", "q4_1", "q4_K", "q5_K", "q6_K"};

class QuantizeVectors : public ::testing::TestWithParam<const char *> {};

TEST_P(QuantizeVectors, MatchesGgmlBytes) {
  const std::string path = vectorsPath();
  KILN_REQUIRE_FILE(path);
  const VectorFile &file = vectorFile();
  ASSERT_TRUE(file.error.empty()) << path << ": " << file.error;

  const std::string format = GetParam();
  int seen = 0;
  for (const VectorRecord &rec : file.records) {
    if (rec.name != format)
      continue;
    ++seen;
    const uint32_t type = uint32_t(rec.type);
    for (int32_t row = 0; row < rec.nrows; ++row) {
      // An exactly sized destination at an odd address: blocks need no alignment.
      std::vector<uint8_t> dst(size_t(rec.rowBytes) + 2, 0xAB);
      const float *src = rec.input.data() + size_t(row) * size_t(rec.ncols);
      ASSERT_EQ(kiln_quantize(type, src, dst.data() + 1, uint64_t(rec.ncols)), KILN_STATUS_OK);
      EXPECT_EQ(dst[0], 0xAB) << "wrote before dst";
      EXPECT_EQ(dst.back(), 0xAB) << "wrote past the row";
      const uint8_t *want = rec.quantized.data() + size_t(row) * size_t(rec.rowBytes);
      if (std::memcmp(dst.data() + 1, want, size_t(rec.rowBytes)) == 0)
        continue;
      size_t i = 0;
      while (dst[1 + i] == want[i])
        ++i;
      FAIL() << format << " row " << row << ": first mismatch at byte " << i << " (block "
             << i / kiln_ggml_block_bytes(type) << "): got " << int(dst[1 + i]) << ", want "
             << int(want[i]);
    }
  }
  EXPECT_GT(seen, 0) << "no record for " << format << " in " << path;
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizeVectors, ::testing::ValuesIn(kQuantFormats),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                           return std::string(info.param);
                         });

// Quantizing what q8_0/q4_0/q4_1 decode to gives the same blocks back (a fixed point), on
// an unaligned source and with several blocks per row.
TEST(Quantize, DequantizedBlocksAreFixedPoints) {
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(float(i) * 0.37f) * float(1 + i % 7);
  for (uint32_t type : {uint32_t(KILN_GGML_TYPE_Q8_0), uint32_t(KILN_GGML_TYPE_Q4_0),
                        uint32_t(KILN_GGML_TYPE_Q4_1)}) {
    uint64_t bytes = 0;
    ASSERT_EQ(kiln_ggml_row_bytes(type, x.size(), &bytes), KILN_STATUS_OK);
    std::vector<uint8_t> q1(bytes), q2(bytes);
    std::vector<float> y(x.size());
    ASSERT_EQ(kiln_quantize(type, x.data(), q1.data(), x.size()), KILN_STATUS_OK);
    ASSERT_EQ(kiln_dequantize(type, q1.data(), y.data(), y.size()), KILN_STATUS_OK);
    ASSERT_EQ(kiln_quantize(type, y.data(), q2.data(), y.size()), KILN_STATUS_OK);
    EXPECT_EQ(q1, q2) << kiln_ggml_type_name(type);
  }
}

// q4_1 stores value = q * d + m with m the block minimum: a constant block decodes exactly
// (d = 0), and every value of a varied block is within half a step of its input (plus the
// fp16 rounding of d and m).
TEST(Quantize, Q4_1ConstantAndRangeBlocks) {
  std::vector<float> x(64);
  for (size_t i = 0; i < 32; ++i)
    x[i] = 3.0f;
  for (size_t i = 32; i < 64; ++i)
    x[i] = std::cos(float(i) * 0.9f) * 5.0f - 2.0f;
  std::vector<uint8_t> q(2 * sizeof(kiln_block_q4_1_t));
  std::vector<float> y(x.size());
  ASSERT_EQ(kiln_quantize(KILN_GGML_TYPE_Q4_1, x.data(), q.data(), x.size()), KILN_STATUS_OK);
  ASSERT_EQ(kiln_dequantize(KILN_GGML_TYPE_Q4_1, q.data(), y.data(), y.size()), KILN_STATUS_OK);
  kiln_block_q4_1_t b[2];
  std::memcpy(b, q.data(), sizeof b);
  EXPECT_EQ(b[0].d, 0);
  EXPECT_EQ(kiln_fp16_to_fp32(b[0].m), 3.0f);
  for (size_t i = 0; i < 32; ++i)
    EXPECT_EQ(y[i], 3.0f);
  const float d = kiln_fp16_to_fp32(b[1].d);
  float lo = x[32];
  for (size_t i = 32; i < 64; ++i)
    lo = std::min(lo, x[i]);
  EXPECT_NEAR(kiln_fp16_to_fp32(b[1].m), lo, std::fabs(lo) * 1e-3f);
  for (size_t i = 32; i < 64; ++i)
    EXPECT_NEAR(y[i], x[i], d * 0.5f + 2e-2f) << "element " << i;
}

TEST(Quantize, F32IsACopy) {
  const float in[3] = {1.5f, -0.0f, 1e-45f};
  uint8_t out[13];
  ASSERT_EQ(kiln_quantize(KILN_GGML_TYPE_F32, in, out + 1, 3), KILN_STATUS_OK);
  EXPECT_EQ(std::memcmp(in, out + 1, sizeof in), 0);
}

TEST(Quantize, RejectsBadArguments) {
  float src[64] = {};
  uint8_t dst[128];
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q8_0, src, dst, 33), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q4_0, src, dst, 16), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q4_1, src, dst, 48), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q4_1, src, nullptr, 32), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q5_1, src, dst, 32), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q3_K, src, dst, 256), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q6_K, src, dst, 64), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_BF16, src, dst, 4), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_quantize(4, src, dst, 32), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q8_0, nullptr, dst, 32), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_F16, src, nullptr, 2), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_GGML_TYPE_Q8_0, nullptr, nullptr, 0), KILN_STATUS_OK);
}

// Every half survives half -> float -> half; NaNs come back quiet with their payload.
TEST(QuantizeFp16, AllHalvesRoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    const uint16_t want = uint16_t(nan ? (h | 0x200) : h);
    ASSERT_EQ(kiln_fp32_to_fp16(kiln_fp16_to_fp32(uint16_t(h))), want) << "half " << hex(h);
  }
}

// Exactly halfway between two adjacent halves rounds to the even one; a float ulp either
// side rounds to the nearer. Covers subnormals, the normal range and both signs.
TEST(QuantizeFp16, TiesRoundToEven) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float lo = kiln_fp16_to_fp32(uint16_t(h | sign));
      const float hi = kiln_fp16_to_fp32(uint16_t((h + 1) | sign));
      const float mid = (lo + hi) / 2; // exact: one bit more than a half has
      ASSERT_EQ(double(mid) * 2, double(lo) + double(hi));
      const uint16_t even = uint16_t(((h & 1) ? h + 1 : h) | sign);
      ASSERT_EQ(kiln_fp32_to_fp16(mid), even) << "midpoint after " << hex(h | sign);
      ASSERT_EQ(kiln_fp32_to_fp16(std::nextafter(mid, lo)), uint16_t(h | sign)) << hex(h);
      ASSERT_EQ(kiln_fp32_to_fp16(std::nextafter(mid, hi)), uint16_t((h + 1) | sign)) << hex(h);
    }
  }
}

TEST(QuantizeFp16, OverflowUnderflowAndSpecials) {
  EXPECT_EQ(kiln_fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(kiln_fp32_to_fp16(65519.996f), 0x7bff); // below the midpoint to 2^16
  EXPECT_EQ(kiln_fp32_to_fp16(65520.0f), 0x7c00);   // the tie goes to even: inf
  EXPECT_EQ(kiln_fp32_to_fp16(-1e6f), 0xfc00);
  EXPECT_EQ(kiln_fp32_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(kiln_fp32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(kiln_fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000); // tie between 0 and 2^-24
  EXPECT_EQ(kiln_fp32_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(kiln_fp32_to_fp16(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(kiln_fp32_to_fp16(1e-45f), 0x0000);                   // float subnormal
  EXPECT_EQ(kiln_fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);    // smallest normal half
  EXPECT_EQ(kiln_fp32_to_fp16(std::ldexp(1023.5f, -24)), 0x0400); // rounds up into normals
  EXPECT_EQ(kiln_fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(kiln_fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(kiln_fp32_to_fp16(fromBits(0x7fc00000u)), 0x7e00);
  EXPECT_EQ(kiln_fp32_to_fp16(fromBits(0xff800001u)), 0xfe00); // sNaN: quieted
  EXPECT_EQ(kiln_fp32_to_fp16(fromBits(0x7fbfe000u)), 0x7fff); // payload kept
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("f16c"))) uint16_t hardwareFp16(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

// vcvtps2ph on a stride through all 2^32 bit patterns (every exponent, both signs,
// NaNs included) plus every float within 4 ulps of each half midpoint.
TEST(QuantizeFp16, MatchesF16cHardware) {
  if (!__builtin_cpu_supports("f16c"))
    GTEST_SKIP() << "CPU without F16C";
  uint64_t checked = 0;
  auto check = [&checked](uint32_t bits) {
    const float f = fromBits(bits);
    ++checked;
    return kiln_fp32_to_fp16(f) == hardwareFp16(f);
  };
  for (uint64_t b = 0; b <= 0xffffffffull; b += 2039) {
    ASSERT_TRUE(check(uint32_t(b))) << "float bits " << hex(uint32_t(b)) << ": kiln "
                                    << hex(kiln_fp32_to_fp16(fromBits(uint32_t(b))))
                                    << ", vcvtps2ph " << hex(hardwareFp16(fromBits(uint32_t(b))));
  }
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const uint32_t mid = bitsOf(kiln_fp16_to_fp32(uint16_t(h))) + (h >= 0x400 ? 0x1000 : 0);
    for (int d = -4; d <= 4; ++d)
      for (uint32_t sign : {0u, 0x80000000u})
        ASSERT_TRUE(check((mid + uint32_t(d)) | sign)) << hex((mid + uint32_t(d)) | sign);
  }
  EXPECT_GT(checked, 2000000u);
}
#endif

} // namespace
