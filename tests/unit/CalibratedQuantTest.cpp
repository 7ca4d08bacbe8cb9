// Calibration-aware rounding (models/weights/CalibratedQuant.h) without a model: on
// random weights and correlated random inputs, the weighted scale search beats rounding
// to nearest on the importance-weighted error and GPTQ beats both on the output error
// ||(W - Q) X||, for every format; the bytes decode with runtime-min's decoders (a packing
// error would show as a huge error); padding stays zero; bad input is one error. And the
// weight store's encodings reach the reference executor's view and the weight layout
// (block rows and r16 groups) as the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/common/WeightLayout.h"
#include "kiln/quant.h"
#include "kiln/quant_packed.h"
#include "models/weights/CalibratedQuant.h"
#include "models/weights/WeightStore.h"

namespace {

using kiln::quant::Rounding;

const uint32_t kFormats[] = {KILN_GGML_TYPE_Q8_0, KILN_GGML_TYPE_Q4_0, KILN_GGML_TYPE_Q4_1,
                             KILN_TYPE_Q3_0};

struct Problem {
  uint64_t rows, cols, samples;
  std::vector<float> w, x; // [rows, cols], [samples, cols]
  kiln::quant::InputStats stats;
};

// Inputs with a few loud channels and correlated columns, as activations have.
Problem makeProblem(uint64_t rows, uint64_t cols, uint32_t seed) {
  Problem p{rows, cols, 512, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  p.w.resize(rows * cols);
  for (float &v : p.w)
    v = 0.1f * n(rng);
  p.x.resize(p.samples * cols);
  for (uint64_t s = 0; s < p.samples; ++s) {
    const float common = n(rng);
    for (uint64_t j = 0; j < cols; ++j)
      p.x[s * cols + j] = (j % 7 == 0 ? 8.0f : 1.0f) * (n(rng) + 0.7f * common);
  }
  p.stats.cols = cols;
  p.stats.add(p.x.data(), p.samples);
  return p;
}

std::vector<float> decode(uint32_t format, const std::vector<uint8_t> &bytes, uint64_t rows,
                          uint64_t cols, uint64_t padded) {
  uint64_t rowBytes = 0;
  kiln_ggml_row_bytes(format, padded, &rowBytes);
  std::vector<float> out(rows * cols), row(padded);
  for (uint64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(kiln_dequantize(format, bytes.data() + r * rowBytes, row.data(), padded),
              KILN_STATUS_OK);
    for (uint64_t j = cols; j < padded; ++j)
      if (format != KILN_GGML_TYPE_Q4_1) // q4_1's zero need not be on its grid
        EXPECT_EQ(row[j], 0.0f) << "padding of row " << r;
    std::copy(row.begin(), row.begin() + long(cols), out.begin() + long(r * cols));
  }
  return out;
}

// sum over rows of sum_j H_jj e_j^2, and ||(W - Q) X^T||^2
void errors(const Problem &p, const std::vector<float> &q, double &weighted, double &output) {
  weighted = output = 0;
  for (uint64_t r = 0; r < p.rows; ++r) {
    for (uint64_t j = 0; j < p.cols; ++j) {
      const double e = double(p.w[r * p.cols + j]) - q[r * p.cols + j];
      weighted += p.stats.h[j * p.cols + j] * e * e;
    }
    for (uint64_t s = 0; s < p.samples; ++s) {
      double y = 0;
      for (uint64_t j = 0; j < p.cols; ++j)
        y += (double(p.w[r * p.cols + j]) - q[r * p.cols + j]) * p.x[s * p.cols + j];
      output += y * y;
    }
  }
}

TEST(CalibratedQuant, WeightedAndGptqBeatNearest) {
  // 72 columns: two whole blocks and a padded third
  const Problem p = makeProblem(24, 72, 1);
  for (uint32_t format : kFormats) {
    SCOPED_TRACE(kiln_ggml_type_name(format));
    double weighted[3], output[3];
    for (Rounding r : {Rounding::Nearest, Rounding::Weighted, Rounding::Gptq}) {
      std::vector<uint8_t> bytes;
      uint64_t padded = 0;
      std::string error;
      ASSERT_TRUE(kiln::quant::encodeCalibrated(format, r, p.w.data(), p.rows, p.cols,
                                                &p.stats, bytes, padded, error))
          << error;
      ASSERT_EQ(padded, 96u);
      errors(p, decode(format, bytes, p.rows, p.cols, padded), weighted[int(r)],
             output[int(r)]);
    }
    EXPECT_LT(weighted[1], 0.9 * weighted[0]); // the scale search pays under importance
    EXPECT_LT(output[2], 0.9 * output[1]);     // error compensation pays on the output
    EXPECT_LT(output[2], 0.8 * output[0]);
  }
}

TEST(CalibratedQuant, DeterministicAndWithoutStatistics) {
  const Problem p = makeProblem(130, 64, 2); // 3 row chunks, the last one short
  std::vector<uint8_t> a, b, plain, nearest;
  uint64_t padded = 0;
  std::string error;
  ASSERT_TRUE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_0, Rounding::Gptq, p.w.data(),
                                            p.rows, p.cols, &p.stats, a, padded, error));
  ASSERT_TRUE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_0, Rounding::Gptq, p.w.data(),
                                            p.rows, p.cols, &p.stats, b, padded, error));
  EXPECT_EQ(a, b);
  // No statistics: identity importance, so the search minimises the plain squared error.
  ASSERT_TRUE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_0, Rounding::Weighted,
                                            p.w.data(), p.rows, p.cols, nullptr, plain,
                                            padded, error));
  ASSERT_TRUE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_0, Rounding::Nearest,
                                            p.w.data(), p.rows, p.cols, nullptr, nearest,
                                            padded, error));
  auto sq = [&](const std::vector<uint8_t> &bytes) {
    std::vector<float> q = decode(KILN_GGML_TYPE_Q4_0, bytes, p.rows, p.cols, padded);
    double e = 0;
    for (size_t i = 0; i < q.size(); ++i)
      e += (double(p.w[i]) - q[i]) * (double(p.w[i]) - q[i]);
    return e;
  };
  EXPECT_LT(sq(plain), sq(nearest));
}

TEST(CalibratedQuant, BadInputIsOneError) {
  const Problem p = makeProblem(4, 64, 3);
  std::vector<uint8_t> bytes;
  uint64_t padded = 0;
  std::string error;
  EXPECT_FALSE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_K, Rounding::Gptq, p.w.data(),
                                             p.rows, p.cols, &p.stats, bytes, padded, error));
  EXPECT_EQ(error, "no calibrated rounding for format q4_K");
  kiln::quant::InputStats narrow;
  narrow.cols = 32;
  narrow.add(p.x.data(), 4);
  EXPECT_FALSE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_0, Rounding::Gptq, p.w.data(),
                                             p.rows, p.cols, &narrow, bytes, padded, error));
  EXPECT_EQ(error, "input statistics of width 32 for rows of 64");
  // Non-finite weights are one error; an all-zero input column (dead) is rounded.
  std::vector<float> w = p.w;
  w[5] = NAN;
  EXPECT_FALSE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_0, Rounding::Gptq, w.data(),
                                             p.rows, p.cols, &p.stats, bytes, padded, error));
  EXPECT_EQ(error, "the weight has values that are not finite (NaN or infinity)");
  kiln::quant::InputStats dead = p.stats;
  for (uint64_t j = 0; j < 64; ++j)
    dead.h[3 * 64 + j] = dead.h[j * 64 + 3] = 0;
  ASSERT_TRUE(kiln::quant::encodeCalibrated(KILN_GGML_TYPE_Q4_0, Rounding::Gptq, p.w.data(),
                                            p.rows, p.cols, &dead, bytes, padded, error))
      << error;
  std::vector<float> q = decode(KILN_GGML_TYPE_Q4_0, bytes, p.rows, p.cols, padded);
  for (float v : q)
    EXPECT_TRUE(std::isfinite(v));
  Rounding r;
  EXPECT_FALSE(kiln::quant::parseRounding("awq", r));
  EXPECT_TRUE(kiln::quant::parseRounding("gptq", r));
}

// An encoding in the store is what the executor reads (dequantizeAs) and what the weight
// layout stores, in block rows and in r16 groups; a replaced tensor loses it.
TEST(CalibratedQuant, StoreEncodingReachesExecutorAndLayout) {
  const Problem p = makeProblem(20, 72, 4);
  kiln::WeightStore store;
  store.addOwnedF32("w", {p.cols, p.rows}, p.w);
  for (uint32_t format : kFormats) {
    SCOPED_TRACE(kiln_ggml_type_name(format));
    kiln::WeightEncoding enc;
    enc.format = format;
    enc.method = "gptq";
    std::string error;
    ASSERT_TRUE(kiln::quant::encodeCalibrated(format, Rounding::Gptq, p.w.data(), p.rows,
                                              p.cols, &p.stats, enc.bytes,
                                              enc.paddedRowLength, error));
    const std::vector<float> want =
        decode(format, enc.bytes, p.rows, p.cols, enc.paddedRowLength);
    store.setEncoding("w", enc);
    std::vector<float> ref;
    ASSERT_TRUE(store.dequantizeAs("w", format, ref, error)) << error;
    EXPECT_EQ(ref, want);
    for (auto layout : {kiln::codegen::RowLayout::Block, kiln::codegen::RowLayout::R16}) {
      if (layout == kiln::codegen::RowLayout::R16 && format == KILN_TYPE_Q3_0)
        continue; // q3_0 has no r16 form
      kiln::codegen::WeightLayout wl;
      ASSERT_TRUE(wl.addWeight(store, "w", format, error, layout)) << error;
      const kiln::codegen::PackedTensor *t = wl.find("w");
      EXPECT_EQ(t->conversion, "gptq-rounded from f32");
      std::vector<float> row(t->paddedRowLength);
      for (uint64_t r = 0; r < p.rows; ++r) {
        if (layout == kiln::codegen::RowLayout::R16)
          ASSERT_EQ(kiln_dequantize_packed_row(t->format, wl.bytes().data() + t->offset, r,
                                               t->paddedRowLength, row.data()),
                    KILN_STATUS_OK);
        else
          ASSERT_EQ(kiln_dequantize(format, wl.bytes().data() + t->offset + r * t->rowStride,
                                    row.data(), t->paddedRowLength),
                    KILN_STATUS_OK);
        for (uint64_t j = 0; j < p.cols; ++j)
          ASSERT_EQ(row[j], want[r * p.cols + j]) << "row " << r << " element " << j;
      }
    }
  }
  store.addOwnedF32("w", {p.cols, p.rows}, p.w); // replaced: the encodings are stale
  EXPECT_EQ(store.encoding("w", KILN_GGML_TYPE_Q4_0), nullptr);
}

} // namespace
