// kiln runtime-min decoders against llama.cpp's reference vectors
// ($KILN_TESTDATA_DIR/ggml-quant-vectors.bin, format in shared/testdata/README.md): every
// record must decode bit-for-bit as ggml's to_float does. Also the type table, row sizes
// and the half/bfloat16 conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "QuantVectors.h"
#include "TestPaths.h"
#include "kiln/quant.h"
#include "kiln/quant_blocks.h"

namespace {

using kiln::test::VectorFile;
using kiln::test::VectorRecord;
using kiln::test::vectorFile;
using kiln::test::vectorsPath;

uint32_t bitsOf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

std::string hexBits(float v) {
  std::ostringstream s;
  s << "0x" << std::hex << bitsOf(v) << " (" << v << ")";
  return s.str();
}

// Formats in the reference file; f32 is checked separately (it has no record).
const char *const kVectorFormats[] = {"f16",  "bf16", "q4_0", "q4_1", "q5_0",   "q5_1",  "q8_0",
                                      "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs"};

class DequantVectors : public ::testing::TestWithParam<const char *> {};

TEST_P(DequantVectors, BitExact) {
  const std::string path = vectorsPath();
  KILN_REQUIRE_FILE(path);
  const VectorFile &file = vectorFile();
  ASSERT_TRUE(file.error.empty()) << path << ": " << file.error;

  const std::string format = GetParam();
  int seen = 0;
  for (const VectorRecord &rec : file.records) {
    if (rec.name != format) continue;
    ++seen;
    const uint32_t type = uint32_t(rec.type);
    const char *name = kiln_ggml_type_name(type);
    ASSERT_NE(name, nullptr) << "type id " << type << " unknown to kiln";
    EXPECT_EQ(std::string(name), rec.name) << "type id " << type;
    EXPECT_EQ(kiln_ggml_block_elems(type), size_t(rec.block));
    uint64_t rowBytes = 0;
    ASSERT_EQ(kiln_ggml_row_bytes(type, uint64_t(rec.ncols), &rowBytes), KILN_STATUS_OK);
    ASSERT_EQ(rowBytes, uint64_t(rec.rowBytes));

    for (int32_t row = 0; row < rec.nrows; ++row) {
      // Exactly-sized buffers at an odd address: ASan catches reads past the last block,
      // UBSan any misaligned field access.
      std::vector<uint8_t> src(size_t(rowBytes) + 1);
      std::memcpy(src.data() + 1, rec.quantized.data() + size_t(row) * rowBytes, rowBytes);
      std::vector<float> got(size_t(rec.ncols));
      ASSERT_EQ(kiln_dequantize(type, src.data() + 1, got.data(), uint64_t(rec.ncols)),
                KILN_STATUS_OK);
      const float *want = rec.dequantized.data() + size_t(row) * size_t(rec.ncols);
      if (std::memcmp(got.data(), want, got.size() * sizeof(float)) == 0) continue;
      size_t i = 0;
      while (bitsOf(got[i]) == bitsOf(want[i])) ++i;
      FAIL() << format << " row " << row << ": first mismatch at element " << i << ": got "
             << hexBits(got[i]) << ", want " << hexBits(want[i]);
    }
  }
  EXPECT_GT(seen, 0) << "no record for " << format << " in " << path;
}

INSTANTIATE_TEST_SUITE_P(AllFormats, DequantVectors, ::testing::ValuesIn(kVectorFormats),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                           return std::string(info.param);
                         });

TEST(DequantVectorFile, EveryRecordIsAKnownFormat) {
  const std::string path = vectorsPath();
  KILN_REQUIRE_FILE(path);
  const VectorFile &file = vectorFile();
  ASSERT_TRUE(file.error.empty()) << path << ": " << file.error;
  EXPECT_EQ(file.records.size(), std::size(kVectorFormats));
  for (const VectorRecord &rec : file.records) {
    bool listed = false;
    for (const char *f : kVectorFormats) listed |= rec.name == f;
    EXPECT_TRUE(listed) << "record " << rec.name << " has no test";
  }
}

TEST(DequantTypeTable, NamesAndBlockSizesMatchGgml) {
  struct Row { uint32_t type; const char *name; size_t elems, bytes; };
  const Row rows[] = {
      {KILN_GGML_TYPE_F32, "f32", 1, 4},
      {KILN_GGML_TYPE_F16, "f16", 1, 2},
      {KILN_GGML_TYPE_BF16, "bf16", 1, 2},
      {KILN_GGML_TYPE_Q4_0, "q4_0", QK4_0, sizeof(kiln_block_q4_0_t)},
      {KILN_GGML_TYPE_Q4_1, "q4_1", QK4_1, sizeof(kiln_block_q4_1_t)},
      {KILN_GGML_TYPE_Q5_0, "q5_0", QK5_0, sizeof(kiln_block_q5_0_t)},
      {KILN_GGML_TYPE_Q5_1, "q5_1", QK5_1, sizeof(kiln_block_q5_1_t)},
      {KILN_GGML_TYPE_Q8_0, "q8_0", QK8_0, sizeof(kiln_block_q8_0_t)},
      {KILN_GGML_TYPE_Q2_K, "q2_K", QK_K, 84},
      {KILN_GGML_TYPE_Q3_K, "q3_K", QK_K, 110},
      {KILN_GGML_TYPE_Q4_K, "q4_K", QK_K, 144},
      {KILN_GGML_TYPE_Q5_K, "q5_K", QK_K, 176},
      {KILN_GGML_TYPE_Q6_K, "q6_K", QK_K, 210},
      {KILN_GGML_TYPE_IQ4_NL, "iq4_nl", QK4_NL, sizeof(kiln_block_iq4_nl_t)},
      {KILN_GGML_TYPE_IQ4_XS, "iq4_xs", QK_K, 136},
  };
  for (const Row &r : rows) {
    ASSERT_NE(kiln_ggml_type_name(r.type), nullptr) << r.name;
    EXPECT_STREQ(kiln_ggml_type_name(r.type), r.name);
    EXPECT_EQ(kiln_ggml_block_elems(r.type), r.elems) << r.name;
    EXPECT_EQ(kiln_ggml_block_bytes(r.type), r.bytes) << r.name;
  }
  // 4 and 5 were q4_2/q4_3, removed from ggml; ids are never reused.
  for (uint32_t unknown : {4u, 5u, 9u, 15u, 31u, 1000u}) {
    EXPECT_EQ(kiln_ggml_type_name(unknown), nullptr) << unknown;
    EXPECT_EQ(kiln_ggml_block_elems(unknown), 0u) << unknown;
    EXPECT_EQ(kiln_ggml_block_bytes(unknown), 0u) << unknown;
  }
}

TEST(RowBytes, MultiplesOfTheBlock) {
  uint64_t bytes = 1;
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_Q4_0, 64, &bytes), KILN_STATUS_OK);
  EXPECT_EQ(bytes, 36u);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_Q6_K, 512, &bytes), KILN_STATUS_OK);
  EXPECT_EQ(bytes, 420u);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_F32, 3, &bytes), KILN_STATUS_OK);
  EXPECT_EQ(bytes, 12u);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_Q8_0, 0, &bytes), KILN_STATUS_OK);
  EXPECT_EQ(bytes, 0u);
}

TEST(RowBytes, RejectsPartialBlocksUnknownTypesAndOverflow) {
  uint64_t bytes = 0;
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_Q4_0, 33, &bytes), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_Q4_K, 255, &bytes),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_ggml_row_bytes(4, 32, &bytes), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_ggml_row_bytes(12345, 32, &bytes), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_F32, UINT64_MAX / 2, &bytes),
            KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_Q8_0, (UINT64_MAX / 32) * 32, &bytes),
            KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(kiln_ggml_row_bytes(KILN_GGML_TYPE_F32, 4, nullptr), KILN_STATUS_INVALID_ARGUMENT);
}

TEST(DequantApi, RejectsBadArguments) {
  uint8_t src[34] = {};
  float dst[32];
  EXPECT_EQ(kiln_dequantize(KILN_GGML_TYPE_Q8_0, src, dst, 31), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_dequantize(4, src, dst, 32), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(kiln_dequantize(KILN_GGML_TYPE_Q8_0, nullptr, dst, 32), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_dequantize(KILN_GGML_TYPE_Q8_0, src, nullptr, 32), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_dequantize(KILN_GGML_TYPE_Q8_0, nullptr, nullptr, 0), KILN_STATUS_OK);
}

TEST(DequantApi, F32IsACopy) {
  const float in[5] = {1.5f, -0.0f, INFINITY, 1e-45f, -3.25f};
  std::vector<uint8_t> src(sizeof in + 1);  // odd address
  std::memcpy(src.data() + 1, in, sizeof in);
  float out[5];
  ASSERT_EQ(kiln_dequantize(KILN_GGML_TYPE_F32, src.data() + 1, out, 5), KILN_STATUS_OK);
  EXPECT_EQ(std::memcmp(in, out, sizeof in), 0);
}

TEST(Fp16, SpecialValues) {
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0x7c00)), 0x7f800000u);  // +inf
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0xfc00)), 0xff800000u);  // -inf
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0x0001)), 0x33800000u);  // 2^-24, smallest subnormal
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0x03ff)), 0x387fc000u);  // largest subnormal
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0x8000)), 0x80000000u);  // -0
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0x0000)), 0x00000000u);
  EXPECT_EQ(kiln_fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(kiln_fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(kiln_fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0x7e00)), 0x7fc00000u);  // quiet NaN
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0x7c01)), 0x7fc02000u);  // sNaN: quieted, payload kept
  EXPECT_EQ(bitsOf(kiln_fp16_to_fp32(0xfe01)), 0xffc02000u);
}

// Every finite half against ldexp, which is exact for these magnitudes.
TEST(Fp16, AllFiniteValuesExact) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) continue;
    const double mag = exp ? std::ldexp(double(1024 + mant), int(exp) - 25)
                           : std::ldexp(double(mant), -24);
    const float want = float((h & 0x8000) ? -mag : mag);
    ASSERT_EQ(bitsOf(kiln_fp16_to_fp32(uint16_t(h))), bitsOf(want)) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16, Bf16IsTheHighHalf) {
  EXPECT_EQ(kiln_bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(bitsOf(kiln_bf16_to_fp32(0xff80)), 0xff800000u);
  EXPECT_EQ(bitsOf(kiln_bf16_to_fp32(0x0001)), 0x00010000u);  // subnormal stays subnormal
  EXPECT_EQ(bitsOf(kiln_bf16_to_fp32(0x7fc1)), 0x7fc10000u);
}

}  // namespace
