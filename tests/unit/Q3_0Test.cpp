// kiln's own q3_0 format (kiln/quant_blocks.h, id KILN_TYPE_Q3_0): the type table, the
// bit layout the kernels rely on, the encoder's error against its inputs and against
// q4_0's simple scale rule, and bad arguments. There are no ggml reference bytes: ggml
// has no such format.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"

namespace {

std::vector<float> gaussianRow(std::mt19937 &rng, size_t n, float scale) {
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> x(n);
  for (float &v : x)
    v = g(rng);
  return x;
}

std::vector<float> roundTrip(const std::vector<float> &x, std::vector<uint8_t> *bytes = nullptr) {
  uint64_t rowBytes = 0;
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_TYPE_Q3_0, x.size(), &rowBytes), KILN_STATUS_OK);
  std::vector<uint8_t> q(rowBytes);
  std::vector<float> y(x.size());
  EXPECT_EQ(kiln_quantize(KILN_TYPE_Q3_0, x.data(), q.data(), x.size()), KILN_STATUS_OK);
  EXPECT_EQ(kiln_dequantize(KILN_TYPE_Q3_0, q.data(), y.data(), y.size()), KILN_STATUS_OK);
  if (bytes)
    *bytes = q;
  return y;
}

TEST(Q3_0, TypeTable) {
  EXPECT_STREQ(kiln_ggml_type_name(KILN_TYPE_Q3_0), "q3_0");
  EXPECT_EQ(kiln_ggml_block_elems(KILN_TYPE_Q3_0), 32u);
  EXPECT_EQ(kiln_ggml_block_bytes(KILN_TYPE_Q3_0), 14u); // 3.5 bits per weight
  uint64_t bytes = 0;
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_TYPE_Q3_0, 192, &bytes), KILN_STATUS_OK);
  EXPECT_EQ(bytes, 6u * 14u);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_TYPE_Q3_0, 172, &bytes), KILN_STATUS_INVALID_ARGUMENT);
  // no collision with a ggml id or with 1000 + id, the r16 repackings
  EXPECT_GE(KILN_TYPE_Q3_0, 1100u);
}

// Hand-built block: element j has code j % 8, d = 0.5, so value (j % 8 - 4) / 2; pins the
// bit layout (low bits in qs[j % 8] at 2 * (j / 8), high bit j of the little-endian qh).
TEST(Q3_0, BitLayout) {
  kiln_block_q3_0_t b;
  std::memset(&b, 0, sizeof b);
  b.d = kiln_fp32_to_fp16(0.5f);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) {
    const int q = j % 8;
    b.qs[j % 8] = uint8_t(b.qs[j % 8] | (q & 3) << (2 * (j / 8)));
    qh |= uint32_t(q >> 2) << j;
  }
  for (int i = 0; i < 4; ++i)
    b.qh[i] = uint8_t(qh >> (8 * i));
  uint8_t raw[1 + sizeof b]; // odd address: decoders take any alignment
  std::memcpy(raw + 1, &b, sizeof b);
  float y[32];
  ASSERT_EQ(kiln_dequantize(KILN_TYPE_Q3_0, raw + 1, y, 32), KILN_STATUS_OK);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(y[j], float(j % 8 - 4) * 0.5f) << "element " << j;
}

// Every element is within half a step (plus the scale's fp16 rounding) of its input, or
// clamped at the ends of the range -4d .. 3d.
TEST(Q3_0, RoundTripErrorBound) {
  std::mt19937 rng(7);
  for (float scale : {1e-3f, 0.02f, 1.0f, 300.0f}) {
    std::vector<float> x = gaussianRow(rng, 32 * 64, scale);
    std::vector<uint8_t> q;
    std::vector<float> y = roundTrip(x, &q);
    for (size_t b = 0; b < x.size() / 32; ++b) {
      kiln_block_q3_0_t blk;
      std::memcpy(&blk, q.data() + b * sizeof blk, sizeof blk);
      const float dd = kiln_fp16_to_fp32(blk.d), d = std::fabs(dd);
      float amax = 0;
      for (size_t j = 0; j < 32; ++j)
        amax = std::max(amax, std::fabs(x[b * 32 + j]));
      ASSERT_GT(d, 0.0f) << "block " << b;
      ASSERT_LE(d, amax) << "block " << b;
      for (size_t j = 0; j < 32; ++j) {
        const size_t i = b * 32 + j;
        if (std::fabs(x[i] - y[i]) > 0.5f * d * 1.001f) { // only a clamped element is farther
          EXPECT_TRUE(y[i] == -4 * dd || y[i] == 3 * dd)
              << "element " << i << " x=" << x[i] << " y=" << y[i] << " d=" << dd;
        }
      }
    }
  }
}

// The scale search never does worse than q4_0's rule scaled to 3 bits (d = max / -4,
// nearest code), and on Gaussian weights it does clearly better.
TEST(Q3_0, SearchBeatsTheSimpleRule) {
  std::mt19937 rng(11);
  const std::vector<float> x = gaussianRow(rng, 32 * 256, 1.0f);
  const std::vector<float> y = roundTrip(x);
  double searched = 0, simple = 0;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0, max = 0;
    for (size_t j = 0; j < 32; ++j)
      if (std::fabs(x[b * 32 + j]) > amax) {
        amax = std::fabs(x[b * 32 + j]);
        max = x[b * 32 + j];
      }
    const float d = kiln_fp16_to_fp32(kiln_fp32_to_fp16(max / -4.0f));
    double eSearched = 0, eSimple = 0;
    for (size_t j = 0; j < 32; ++j) {
      const size_t i = b * 32 + j;
      const float q = std::min(3.0f, std::max(-4.0f, std::round(x[i] / d)));
      eSimple += double(x[i] - q * d) * double(x[i] - q * d);
      eSearched += double(x[i] - y[i]) * double(x[i] - y[i]);
    }
    EXPECT_LE(eSearched, eSimple * (1 + 1e-5)) << "block " << b;
    searched += eSearched;
    simple += eSimple;
  }
  EXPECT_LT(searched, 0.95 * simple);
}

// Quantising what q3_0 decodes to gives the same values back, and constant and zero
// blocks are exact.
TEST(Q3_0, DecodedValuesAreFixedPoints) {
  std::mt19937 rng(3);
  const std::vector<float> y1 = roundTrip(gaussianRow(rng, 32 * 32, 0.5f));
  EXPECT_EQ(roundTrip(y1), y1);
  std::vector<float> c(64, 0.0f);
  std::fill(c.begin() + 32, c.end(), -2.5f);
  EXPECT_EQ(roundTrip(c), c);
}

TEST(Q3_0, RejectsBadArguments) {
  float src[64] = {};
  uint8_t dst[64];
  EXPECT_EQ(kiln_quantize(KILN_TYPE_Q3_0, src, dst, 48), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_TYPE_Q3_0, nullptr, dst, 32), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_TYPE_Q3_0, src, nullptr, 32), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_dequantize(KILN_TYPE_Q3_0, dst, src, 33), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_dequantize(KILN_TYPE_Q3_0, nullptr, src, 32), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_quantize(KILN_TYPE_Q3_0 + 1, src, dst, 32), KILN_STATUS_UNSUPPORTED);
}

// Non-finite input gives defined bytes (no trap, no undefined behaviour) and leaves the
// other blocks of the row alone.
TEST(Q3_0, NonFiniteBlockStaysLocal) {
  std::vector<float> x(64, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  x[5] = std::nanf("");
  const std::vector<float> y = roundTrip(x);
  for (size_t i = 32; i < 64; ++i)
    EXPECT_EQ(y[i], 1.0f);
}

} // namespace
