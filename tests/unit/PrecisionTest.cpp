// Precision assignment pieces without a model: the knapsack against brute force and a
// hand-checked optimum, the rules/map vocabulary, and the reference executor's view of a
// weight stored in a format (WeightStore::dequantizeAs) against what the weight layout
// really packs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "codegen/common/WeightLayout.h"
#include "compiler/pipelines/PrecisionKnapsack.h"
#include "models/weights/WeightStore.h"
#include "kiln/quant.h"
#include "kiln/quant_packed.h"
#include "passes/precision/PrecisionSpec.h"

namespace {

using kiln::pipelines::KnapsackItem;
using kiln::pipelines::solveKnapsack;

// Every combination of options; the least loss within the budget (inf if none).
double bruteForce(const std::vector<KnapsackItem> &items, uint64_t budget) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<size_t> c(items.size(), 0);
  while (true) {
    uint64_t bytes = 0;
    double loss = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      bytes += items[i].bytes[c[i]];
      loss += items[i].loss[c[i]];
    }
    if (bytes <= budget)
      best = std::min(best, loss);
    size_t i = 0;
    while (i < items.size() && ++c[i] == items[i].bytes.size())
      c[i++] = 0;
    if (i == items.size())
      return best;
  }
}

double lossOf(const std::vector<KnapsackItem> &items, const std::vector<size_t> &c,
              uint64_t *bytes) {
  double loss = 0;
  *bytes = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    loss += items[i].loss[c[i]];
    *bytes += items[i].bytes[c[i]];
  }
  return loss;
}

TEST(PrecisionKnapsack, KnownOptimum) {
  // Three tensors, options 8/4/2 bytes. Within 12 bytes the best is the middle option of
  // each (1 + 3 + 0.5 = 4.5); the greedy "cheapest loss per byte first" would not find it.
  std::vector<KnapsackItem> items = {
      {{8, 4, 2}, {0, 1, 5}}, {{8, 4, 2}, {0, 3, 4}}, {{8, 4, 2}, {0, 0.5, 10}}};
  std::vector<size_t> choice;
  std::string error;
  ASSERT_TRUE(solveKnapsack(items, 12, 1, choice, error)) << error;
  EXPECT_EQ(choice, (std::vector<size_t>{1, 1, 1}));
  // 24 bytes fit the largest everywhere: zero loss.
  ASSERT_TRUE(solveKnapsack(items, 24, 1, choice, error)) << error;
  EXPECT_EQ(choice, (std::vector<size_t>{0, 0, 0}));
  // 6 bytes: only the smallest everywhere.
  ASSERT_TRUE(solveKnapsack(items, 6, 1, choice, error)) << error;
  EXPECT_EQ(choice, (std::vector<size_t>{2, 2, 2}));
}

TEST(PrecisionKnapsack, TooSmallBudgetIsOneError) {
  std::vector<KnapsackItem> items = {{{8, 4}, {0, 1}}, {{8, 4}, {0, 1}}};
  std::vector<size_t> choice;
  std::string error;
  EXPECT_FALSE(solveKnapsack(items, 7, 1, choice, error));
  EXPECT_EQ(error, "the budget of 7 weight bytes is below the smallest possible model (8 "
                   "bytes, every tensor in its smallest format)");
}

TEST(PrecisionKnapsack, MatchesBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<KnapsackItem> items(1 + rng() % 6);
    uint64_t minBytes = 0, maxBytes = 0;
    for (KnapsackItem &it : items) {
      size_t n = 1 + rng() % 4;
      uint64_t lo = UINT64_MAX, hi = 0;
      for (size_t o = 0; o < n; ++o) {
        it.bytes.push_back(1 + rng() % 40);
        it.loss.push_back(double(rng() % 1000) / 100.0);
        lo = std::min(lo, it.bytes.back());
        hi = std::max(hi, it.bytes.back());
      }
      minBytes += lo;
      maxBytes += hi;
    }
    uint64_t budget = minBytes + rng() % (maxBytes - minBytes + 1);
    for (uint64_t unit : {uint64_t(1), uint64_t(3)}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " unit " + std::to_string(unit));
      std::vector<size_t> choice;
      std::string error;
      if (!solveKnapsack(items, budget, unit, choice, error)) {
        EXPECT_GT(unit, 1u) << error; // only rounding can make a fitting budget fail
        continue;
      }
      uint64_t bytes;
      double loss = lossOf(items, choice, &bytes);
      EXPECT_LE(bytes, budget); // rounding up sizes never overshoots
      if (unit == 1)
        EXPECT_NEAR(loss, bruteForce(items, budget), 1e-9);
      else
        EXPECT_GE(loss, bruteForce(items, budget) - 1e-9);
    }
  }
}

TEST(PrecisionSpec, RulesAndClasses) {
  namespace p = kiln::precision;
  p::Rules r;
  std::string error;
  ASSERT_TRUE(p::parseRules("attn_qkv=int4,ffn=q8_0,norms=f16,default=int4m", r, error)) << error;
  EXPECT_EQ(r.formatOf("attn_k"), uint32_t(KILN_GGML_TYPE_Q4_0));
  EXPECT_EQ(r.formatOf("ffn_down"), uint32_t(KILN_GGML_TYPE_Q8_0));
  EXPECT_EQ(r.formatOf("norms"), uint32_t(KILN_GGML_TYPE_F16));
  bool named = true;
  EXPECT_EQ(r.formatOf("output", &named), uint32_t(KILN_GGML_TYPE_Q4_1));
  EXPECT_FALSE(named);
  EXPECT_EQ(p::classOf("linear", "blk.12.attn_output.weight"), "attn_output");
  EXPECT_EQ(p::classOf("linear", "blk.0.ffn_down.comp_bias"), "");
  EXPECT_EQ(p::classOf("logits", "token_embd.weight"), "output");
  EXPECT_FALSE(p::parseRules("attn_q=q4_0,", r, error));
  EXPECT_FALSE(p::parseRules("ffn=bf16", r, error));
  // A 172-wide row is padded to 6 blocks: 64 rows of q4_0 are 64 * 6 * 18 bytes.
  EXPECT_EQ(p::storedBytes(KILN_GGML_TYPE_Q4_0, 172, 64), 6912u);
  EXPECT_EQ(p::storedBytes(KILN_GGML_TYPE_F16, 172, 64), 172u * 2 * 64);
  // q3_0: 14-byte blocks, and as a linear's weight no 16-row groups or 64-byte rows
  // (kiln-assign-layout gives it rows of whole blocks): 5 rows of 172 are 5 * 6 * 14.
  EXPECT_EQ(p::storedBytes(KILN_TYPE_Q3_0, 172, 5), 420u);
  EXPECT_EQ(p::storedBytes(KILN_TYPE_Q3_0, 172, 5, /*linearLayout=*/true), 420u);
  EXPECT_EQ(p::storedBytes(KILN_GGML_TYPE_Q4_0, 172, 5, /*linearLayout=*/true), 16u * 6 * 18);
  // HVX targets: 32-row groups; rows64: every row rounded up to the target's alignment
  EXPECT_EQ(p::storedBytes(KILN_GGML_TYPE_Q4_0, 172, 5, true, 32, 128), 32u * 6 * 18);
  EXPECT_EQ(p::storedBytes(KILN_GGML_TYPE_Q4_0, 172, 5, true, 0, 128), 128u * 5);
  uint32_t id = 0;
  ASSERT_TRUE(p::parseFormat("int3", id));
  EXPECT_EQ(id, KILN_TYPE_Q3_0);
  ASSERT_TRUE(p::parseFormat("q3_0", id));
  EXPECT_EQ(p::formatName(id), "q3_0");
  EXPECT_FALSE(p::parseFormat("q3_k", id));
  // ggml's K-quants, in either spelling; kept from a source file on request (lossless),
  // stored in rows of whole
  // 256-element blocks (no 16-row groups or 64-byte rows), tried by auto only where the
  // rows fill those blocks
  ASSERT_TRUE(p::parseFormat("q4_k", id));
  EXPECT_EQ(id, KILN_GGML_TYPE_Q4_K);
  ASSERT_TRUE(p::parseFormat("q6_K", id));
  EXPECT_EQ(p::formatName(id), "q6_K");
  EXPECT_EQ(p::sourceFormat(KILN_GGML_TYPE_Q5_K, false, /*keepKQuants=*/true),
            uint32_t(KILN_GGML_TYPE_Q5_K));
  EXPECT_EQ(p::sourceFormat(KILN_GGML_TYPE_Q5_K, false), uint32_t(KILN_GGML_TYPE_Q8_0));
  EXPECT_EQ(p::sourceFormat(KILN_GGML_TYPE_Q4_K, false), uint32_t(KILN_GGML_TYPE_Q4_1));
  EXPECT_EQ(p::sourceFormat(KILN_GGML_TYPE_Q5_0, false), uint32_t(KILN_GGML_TYPE_Q8_0));
  EXPECT_EQ(p::storedBytes(KILN_GGML_TYPE_Q6_K, 2048, 3, /*linearLayout=*/true), 3u * 8 * 210);
  EXPECT_EQ(p::storedBytes(KILN_GGML_TYPE_Q4_K, 172, 2, /*linearLayout=*/true), 2u * 144);
  EXPECT_TRUE(p::candidateFormat(KILN_GGML_TYPE_Q4_K, 512));
  EXPECT_FALSE(p::candidateFormat(KILN_GGML_TYPE_Q4_K, 64));
  EXPECT_TRUE(p::candidateFormat(KILN_GGML_TYPE_Q4_0, 64));
  ASSERT_TRUE(p::parseRules("ffn_down=int3,default=q4_0", r, error)) << error;
  EXPECT_EQ(r.formatOf("ffn_down"), KILN_TYPE_Q3_0);
  EXPECT_FALSE(p::parseRules("norms=q3_0", r, error));
  // the auto search's candidates end with the smallest format
  EXPECT_EQ(p::supportedFormats().back(), KILN_TYPE_Q3_0);
  std::map<std::string, uint32_t> m;
  ASSERT_TRUE(p::parseMap("a.weight=int8,b=f16", m, error)) << error;
  EXPECT_EQ(p::printMap(m), "a.weight=q8_0,b=f16");
  EXPECT_FALSE(p::parseMap("a=q4_0,a=q8_0", m, error));
  EXPECT_EQ(error, "weight 'a' is named twice in the precision map");
  EXPECT_FALSE(p::parseMap("a=q4_0,=f16", m, error));
  EXPECT_EQ(error, "precision map entry '=f16' is not weight=format");
  EXPECT_FALSE(p::parseMap("a=q5_1", m, error));
  EXPECT_EQ(error.rfind("unknown format 'q5_1' for weight 'a'", 0), 0u) << error;
}

// The budget's byte count is what the weight layout stores, in every layout kiln compile
// uses (r16, r32 for HVX, rows64 at 64 and 128 bytes), for odd and even block counts and
// ragged last groups: a --max-weight-bytes budget holds for the artifact. And so is
// WeightLayout::storedBytes, which the lowering sizes the weights section by.
TEST(PrecisionSpec, StoredBytesIsWhatTheLayoutStores) {
  namespace p = kiln::precision;
  using kiln::codegen::RowLayout;
  struct Case {
    RowLayout layout;
    uint32_t packRows;
    uint64_t rowAlign;
  };
  const Case cases[] = {{RowLayout::R16, 16, 64},
                        {RowLayout::R32, 32, 64},
                        {RowLayout::Rows, 0, 64},
                        {RowLayout::Rows, 0, 128}};
  for (uint64_t rowLen : {32u, 96u, 172u, 2048u})
    for (uint64_t rows : {1u, 5u, 40u, 64u})
      for (uint32_t format : {uint32_t(KILN_GGML_TYPE_F32), uint32_t(KILN_GGML_TYPE_F16),
                              uint32_t(KILN_GGML_TYPE_Q8_0), uint32_t(KILN_GGML_TYPE_Q4_0),
                              uint32_t(KILN_GGML_TYPE_Q4_1)})
        for (const Case &c : cases) {
          SCOPED_TRACE(std::string(kiln_ggml_type_name(format)) + " " + std::to_string(rowLen) +
                       " x " + std::to_string(rows) + " pack " + std::to_string(c.packRows) +
                       " align " + std::to_string(c.rowAlign));
          kiln::WeightStore store;
          store.addOwnedF32("w", {rowLen, rows}, std::vector<float>(rowLen * rows, 0.25f));
          // f32/f16 have no packed form: the layout pass gives them rows64
          const bool packable = kiln_packed_type(format, 16) != 0;
          const RowLayout layout = c.packRows && !packable ? RowLayout::Rows : c.layout;
          kiln::codegen::WeightLayout wl;
          std::string error;
          ASSERT_TRUE(wl.addWeight(store, "w", format, error, layout, c.rowAlign)) << error;
          EXPECT_EQ(p::storedBytes(format, rowLen, rows, true, c.packRows, c.rowAlign),
                    wl.find("w")->size);
          // the size the lowering reserves the weights section by
          EXPECT_EQ(kiln::codegen::WeightLayout::storedBytes(format, layout, rows, rowLen,
                                                             c.rowAlign),
                    wl.find("w")->size);
          kiln::codegen::WeightLayout block;
          ASSERT_TRUE(block.addWeight(store, "w", format, error, RowLayout::Block)) << error;
          EXPECT_EQ(kiln::codegen::WeightLayout::storedBytes(format, RowLayout::Block, rows,
                                                             rowLen),
                    block.find("w")->size);
        }
}

// What the reference executor reads for a weight stored in a format equals the layout's
// packed bytes decoded, padding and all (a 172-wide row in every block format).
TEST(PrecisionReference, DequantizeAsMatchesWeightLayout) {
  const uint64_t rowLen = 172, rows = 5;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> data(rowLen * rows);
  for (float &x : data)
    x = dist(rng);
  kiln::WeightStore store;
  store.addOwnedF32("w", {rowLen, rows}, data);
  for (uint32_t format : {uint32_t(KILN_GGML_TYPE_F32), uint32_t(KILN_GGML_TYPE_F16),
                          uint32_t(KILN_GGML_TYPE_Q8_0), uint32_t(KILN_GGML_TYPE_Q4_0),
                          uint32_t(KILN_GGML_TYPE_Q4_1), uint32_t(KILN_TYPE_Q3_0)}) {
    SCOPED_TRACE(kiln_ggml_type_name(format));
    std::vector<float> ref;
    std::string error;
    ASSERT_TRUE(store.dequantizeAs("w", format, ref, error)) << error;
    kiln::codegen::WeightLayout layout;
    ASSERT_TRUE(layout.addWeight(store, "w", format, error)) << error;
    const kiln::codegen::PackedTensor *t = layout.find("w");
    std::vector<float> row(t->paddedRowLength);
    double err = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(kiln_dequantize(format, layout.bytes().data() + t->offset + r * t->rowStride,
                                row.data(), t->paddedRowLength),
                KILN_STATUS_OK);
      for (uint64_t i = 0; i < rowLen; ++i) {
        ASSERT_EQ(row[i], ref[r * rowLen + i]) << "row " << r << " element " << i;
        err = std::max(err, double(std::fabs(row[i] - data[r * rowLen + i])));
      }
    }
    // And it is a real rounding: lossless only for f32.
    if (format == KILN_GGML_TYPE_F32)
      EXPECT_EQ(err, 0.0);
    else
      EXPECT_GT(err, 0.0);
  }
}

} // namespace
