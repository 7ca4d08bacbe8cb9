// Layer and head importance (compiler/analysis): invariants on a synthetic model (a layer
// or head that is already zero has no ablation effect, the backward-pass gate gradient
// equals a central difference, entropies are within their bounds), Spearman on known
// series, and a smoke run of the whole report on stories260K.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include "compiler/InitAll.h"
#include "compiler/analysis/Importance.h"
#include "compiler/analysis/ImportanceReport.h"
#include "compiler/analysis/ModelLayout.h"
#include "compiler/eval/Perplexity.h"
#include "compiler/eval/RefExecutor.h"
#include "compiler/frontends/gguf/GgufImport.h"
#include "compiler/frontends/gguf/GgufVocab.h"
#include "compiler/frontends/gguf/SyntheticGguf.h"
#include "tests/unit/TestPaths.h"

namespace {

using namespace kiln::analysis;

struct Model {
  mlir::MLIRContext ctx;
  kiln::gguf::ImportedModel imported;
};

std::unique_ptr<Model> importModel(const std::string &path) {
  auto m = std::make_unique<Model>();
  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  m->ctx.appendDialectRegistry(registry);
  std::string error;
  EXPECT_TRUE(kiln::gguf::importGguf(path, m->ctx, m->imported, error)) << error;
  return m;
}

// 3 layers, 4 query heads over 2 KV heads: small enough for many passes.
std::unique_ptr<Model> syntheticModel() {
  kiln::llama::SyntheticOptions o;
  auto &c = o.config;
  c.vocabSize = 300;
  c.dim = 32;
  c.numLayers = 3;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.headDim = 8;
  c.ffnDim = 48;
  c.contextLength = 64;
  c.ropeDims = c.headDim;
  o.seed = 7;
  std::string path = (std::filesystem::temp_directory_path() /
                      ("kiln-importance-test-" + std::to_string(getpid()) + ".gguf"))
                         .string();
  std::string error;
  EXPECT_TRUE(kiln::gguf::writeSyntheticLlama(o, path, error)) << error;
  auto m = importModel(path);
  std::filesystem::remove(path); // the mapping stays valid after unlink
  return m;
}

// Four chunks of 16 pseudo-random tokens.
CalibrationSet syntheticCalibration() {
  CalibrationSet calib;
  calib.ctx = 16;
  calib.bos = 1;
  uint32_t state = 12345;
  calib.tokens.push_back(1);
  for (int i = 0; i < 4 * 16 + 3; ++i) {
    state = state * 1664525u + 1013904223u;
    calib.tokens.push_back(int32_t(3 + (state >> 8) % 297));
  }
  return calib;
}

TEST(Spearman, KnownSeries) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Monotone but not linear: ranks only.
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {1, 8, 27, 1000}), 1.0);
  // Ties take the average rank: b ranks (1, 2, 3.5, 5, 3.5) -> 8 / sqrt(10 * 9.5).
  EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}), 8.0 / std::sqrt(95.0), 1e-12);
  EXPECT_DOUBLE_EQ(spearman({1, 1, 2}, {3, 3, 4}), 1.0);
  // Undefined: constant series, too short, lengths differ.
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(spearman({1}, {2})));
  EXPECT_TRUE(std::isnan(spearman({1, 2}, {1, 2, 3})));
}

TEST(Spearman, DisplayRanks) {
  EXPECT_EQ(ranksDescending({0.5, 0.9, 0.5, 0.1}), (std::vector<int32_t>{2, 1, 2, 4}));
}

// The executor's observation hooks see every op in order with its layer, the attention
// probabilities of every (row, head), and change nothing.
TEST(ExecutorHooks, SeeResultsAndAttentionWithoutChangingThem) {
  auto m = syntheticModel();
  std::string error;
  auto exec = kiln::RefExecutor::create(*m->imported.module, m->imported.weights, 16, error);
  ASSERT_TRUE(exec) << error;
  std::vector<int32_t> tokens = {1, 260, 270, 281, 5, 299, 100, 42};
  kiln::Matrix plain, observed;
  ASSERT_TRUE(exec->forward(tokens, 0, plain, error)) << error;

  std::vector<uint32_t> seen;
  std::vector<int32_t> layers;
  exec->setResultObserver([&](const kiln::ObservedOp &op, const kiln::Matrix &r) {
    seen.push_back(op.index);
    layers.push_back(op.layer);
    EXPECT_EQ(r.rows(), Eigen::Index(tokens.size())) << op.name;
  });
  int calls = 0;
  exec->setAttentionObserver(
      [&](const kiln::ObservedOp &op, Eigen::Index t, int32_t head, const Eigen::VectorXf &probs) {
        ++calls;
        EXPECT_EQ(op.name, "kiln.attention");
        EXPECT_EQ(probs.size(), t + 1); // causal, from an empty cache
        EXPECT_NEAR(probs.sum(), 1.0f, 1e-5f);
        EXPECT_LT(head, 4);
      });
  exec->resetCache();
  ASSERT_TRUE(exec->forward(tokens, 0, observed, error)) << error;
  EXPECT_EQ((plain - observed).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ(calls, 3 * 8 * 4); // layers x rows x heads
  ASSERT_EQ(seen.size(), exec->ops().size());
  for (size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(seen[i], exec->ops()[i].index);
  EXPECT_EQ(layers.front(), -1); // embed
  EXPECT_EQ(layers.back(), -1);  // logits
  EXPECT_EQ(exec->ops().front().weight, "token_embd.weight");
  EXPECT_EQ(std::count(layers.begin(), layers.end(), 2),
            std::count(layers.begin(), layers.end(), 0));

  exec->setResultObserver({});
  exec->setAttentionObserver({});
  exec->resetCache();
  ASSERT_TRUE(exec->forward(tokens, 0, observed, error)) << error;
  EXPECT_EQ(calls, 3 * 8 * 4);
}

TEST(ModelLayout, FindsBranchesAndHeads) {
  auto m = syntheticModel();
  std::vector<LayerLayout> layers;
  std::string error;
  ASSERT_TRUE(findLayers(*m->imported.module, layers, error)) << error;
  ASSERT_EQ(layers.size(), 3u);
  for (const LayerLayout &l : layers) {
    ASSERT_EQ(l.branches.size(), 2u);
    std::string p = "blk." + std::to_string(l.layer) + ".";
    EXPECT_EQ(l.branches[0].weight, p + "attn_output.weight");
    EXPECT_EQ(l.branches[1].weight, p + "ffn_down.weight");
    EXPECT_EQ(l.attnOutWeight, p + "attn_output.weight");
    EXPECT_EQ(l.heads, 4);
    EXPECT_EQ(l.kvHeadOf, (std::vector<int32_t>{0, 0, 1, 1}));
    EXPECT_LT(l.inputOp, l.outputOp);
  }
  // Layer l's output is what enters layer l + 1.
  EXPECT_EQ(layers[0].outputOp, layers[1].inputOp);
  EXPECT_EQ(layers[1].outputOp, layers[2].inputOp);
}

TEST(Importance, SyntheticReportIsConsistent) {
  auto m = syntheticModel();
  CalibrationSet calib = syntheticCalibration();
  ImportanceReport r;
  std::string error;
  ASSERT_TRUE(measureImportance(*m->imported.module, m->imported.weights, calib, r, error))
      << error;
  EXPECT_EQ(r.chunks, 4u);
  EXPECT_EQ(r.scored, 4u * 7u); // rows 8..14 of each chunk of 16
  ASSERT_EQ(r.layers.size(), 3u);
  ASSERT_EQ(r.heads.size(), 12u);

  // The base PPL is exactly what `kiln ppl` measures on the same chunks.
  auto exec = kiln::RefExecutor::create(*m->imported.module, m->imported.weights, calib.ctx, error);
  ASSERT_TRUE(exec) << error;
  kiln::PerplexityResult ppl;
  ASSERT_TRUE(kiln::perplexity(*exec, nullptr, calib.tokens, calib.bos, calib.ctx, 0, ppl, error));
  EXPECT_NEAR(r.basePpl, ppl.ppl, 1e-9 * ppl.ppl);

  // Average entropy over scored rows j (j + 1 positions visible) is within [0, mean log(j+1)].
  double maxEntropy = 0;
  for (uint32_t j = calib.ctx / 2; j + 1 < calib.ctx; ++j)
    maxEntropy += std::log(double(j + 1)) / double(calib.ctx - 1 - calib.ctx / 2);
  for (const HeadScore &h : r.heads) {
    EXPECT_GE(h.entropy, 0.0);
    EXPECT_LE(h.entropy, maxEntropy + 1e-6) << "layer " << h.layer << " head " << h.head;
    EXPECT_EQ(h.kvHead, h.head / 2);
    EXPECT_GE(h.ablationKld, 0.0);
  }
  for (const LayerScore &l : r.layers) {
    EXPECT_GT(l.ablationKld, 0.0);
    EXPECT_GE(l.blockInfluence, 0.0);
    EXPECT_LE(l.blockInfluence, 2.0);
    EXPECT_DOUBLE_EQ(l.gradientScore, std::fabs(l.gradient));
  }
  // The ablation PPL is the calibration PPL of the model with the layer removed.
  std::vector<LayerLayout> layers;
  ASSERT_TRUE(findLayers(*m->imported.module, layers, error)) << error;
  kiln::WeightStore without = overlayOf(m->imported.weights);
  ASSERT_TRUE(scaleBranches(without, layers[1], 0.0, error)) << error;
  double nll = 0;
  ASSERT_TRUE(calibrationNll(*m->imported.module, without, calib, nll, error)) << error;
  EXPECT_NEAR(r.layers[1].ablationPpl, std::exp(nll), 1e-9 * std::exp(nll));
  EXPECT_FALSE(std::isnan(r.blockInfluenceVsAblation));
  EXPECT_FALSE(std::isnan(r.gradientVsAblation));
  EXPECT_FALSE(std::isnan(r.headEntropyVsAblation));
}

TEST(Importance, LayerWithZeroBranchesHasNoEffect) {
  auto m = syntheticModel();
  CalibrationSet calib = syntheticCalibration();
  std::vector<LayerLayout> layers;
  std::string error;
  ASSERT_TRUE(findLayers(*m->imported.module, layers, error)) << error;
  kiln::WeightStore store = overlayOf(m->imported.weights);
  ASSERT_TRUE(scaleBranches(store, layers[1], 0.0, error)) << error;
  ImportanceOptions opts;
  opts.headAblation = false;
  ImportanceReport r;
  ASSERT_TRUE(measureImportance(*m->imported.module, store, calib, r, error, opts)) << error;
  EXPECT_LT(r.layers[1].ablationKld, 1e-9);
  EXPECT_NEAR(r.layers[1].ablationPpl, r.basePpl, 1e-9 * r.basePpl);
  EXPECT_LT(r.layers[1].blockInfluence, 1e-6); // it passes its input through
  EXPECT_EQ(r.layers[1].gradient, 0.0);        // the gate scales a zero branch
  EXPECT_GT(r.layers[0].ablationKld, 1e-4);
  EXPECT_GT(r.layers[2].ablationKld, 1e-4);
  for (const HeadScore &h : r.heads) // heads skipped: entropy only
    EXPECT_EQ(h.ablationKld, 0.0);
}

TEST(Importance, HeadWithZeroColumnsHasNoEffect) {
  auto m = syntheticModel();
  CalibrationSet calib = syntheticCalibration();
  std::vector<LayerLayout> layers;
  std::string error;
  ASSERT_TRUE(findLayers(*m->imported.module, layers, error)) << error;
  kiln::WeightStore store = overlayOf(m->imported.weights);
  ASSERT_TRUE(zeroHead(store, layers[2], 3, error)) << error;
  ImportanceOptions opts;
  opts.layerAblation = false;
  opts.gradient = false;
  ImportanceReport r;
  ASSERT_TRUE(measureImportance(*m->imported.module, store, calib, r, error, opts)) << error;
  for (const HeadScore &h : r.heads) {
    if (h.layer == 2 && h.head == 3)
      EXPECT_LT(h.ablationKld, 1e-9);
    else
      EXPECT_GT(h.ablationKld, 1e-7) << "layer " << h.layer << " head " << h.head;
  }
  EXPECT_FALSE(zeroHead(store, layers[0], 4, error));
  EXPECT_EQ(error, "layer 0 has no query head 4");
}

// dL/dg from the backward pass against (L(1 + e) - L(1 - e)) / 2e on the same chunks.
TEST(Importance, GateGradientMatchesCentralDifference) {
  auto m = syntheticModel();
  CalibrationSet calib = syntheticCalibration();
  ImportanceOptions opts;
  opts.layerAblation = opts.headAblation = false;
  ImportanceReport r;
  std::string error;
  ASSERT_TRUE(measureImportance(*m->imported.module, m->imported.weights, calib, r, error, opts))
      << error;
  std::vector<LayerLayout> layers;
  ASSERT_TRUE(findLayers(*m->imported.module, layers, error)) << error;
  const double e = 1e-2;
  for (size_t k = 0; k < layers.size(); ++k) {
    double nll[2];
    for (int s = 0; s < 2; ++s) {
      kiln::WeightStore store = overlayOf(m->imported.weights);
      ASSERT_TRUE(scaleBranches(store, layers[k], s ? 1 - e : 1 + e, error)) << error;
      ASSERT_TRUE(calibrationNll(*m->imported.module, store, calib, nll[s], error)) << error;
    }
    const double fd = (nll[0] - nll[1]) / (2 * e);
    EXPECT_NEAR(r.layers[k].gradient, fd, 2e-3 * std::fabs(fd) + 2e-5) << "layer " << k;
  }
}

// A module whose layer 1 a pass removed (ops gone, the stream passed through): the
// layout comes from the IR, so the remaining layers keep their numbers.
TEST(Importance, ModuleWithARemovedLayer) {
  auto m = syntheticModel();
  mlir::ModuleOp module = *m->imported.module;
  std::vector<LayerLayout> layers;
  std::string error;
  ASSERT_TRUE(findLayers(module, layers, error)) << error;
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("forward");
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : fn.getBody().front())
    ops.push_back(&op);
  ops[layers[1].outputOp]->getResult(0).replaceAllUsesWith(ops[layers[1].inputOp]->getResult(0));
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    if (auto l = (*it)->getAttrOfType<mlir::IntegerAttr>("kiln.layer"); l && l.getInt() == 1)
      (*it)->erase();

  ImportanceReport r;
  ASSERT_TRUE(measureImportance(module, m->imported.weights, syntheticCalibration(), r, error))
      << error;
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.layers[0].layer, 0);
  EXPECT_EQ(r.layers[1].layer, 2);
  ASSERT_EQ(r.heads.size(), 8u);
  EXPECT_EQ(r.heads[4].layer, 2);
  EXPECT_GT(r.layers[1].ablationKld, 0.0);
}

TEST(Importance, RejectsShortTextAndTinyContext) {
  auto m = syntheticModel();
  CalibrationSet calib = syntheticCalibration();
  ImportanceReport r;
  std::string error;
  calib.ctx = 200;
  EXPECT_FALSE(measureImportance(*m->imported.module, m->imported.weights, calib, r, error));
  EXPECT_EQ(error, "the calibration text has 68 tokens, fewer than one chunk of 200");
  calib.ctx = 2;
  EXPECT_FALSE(measureImportance(*m->imported.module, m->imported.weights, calib, r, error));
  EXPECT_EQ(error, "context 2 is too small to score (need at least 4)");
}

// The whole report on the real model, two chunks: shapes, finiteness and the writers.
TEST(Importance, Stories260KSmoke) {
  const std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  const std::string text = kiln::test::modelsDir() + "/tinystories-calib.txt";
  KILN_REQUIRE_FILE(model);
  KILN_REQUIRE_FILE(text);
  auto m = importModel(model);
  std::string error;
  auto tok = kiln::gguf::Tokenizer::fromGguf(*m->imported.file, error);
  ASSERT_TRUE(tok) << error;
  std::ifstream in(text, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  CalibrationSet calib;
  calib.tokens = tok->encode(buf.str(), true);
  calib.bos = tok->bos();
  calib.ctx = 128;
  calib.maxChunks = 2;
  ImportanceReport r;
  ASSERT_TRUE(measureImportance(*m->imported.module, m->imported.weights, calib, r, error))
      << error;
  ASSERT_EQ(r.layers.size(), 5u);
  ASSERT_EQ(r.heads.size(), 40u);
  EXPECT_GT(r.basePpl, 2.0);
  EXPECT_LT(r.basePpl, 30.0);
  for (const LayerScore &l : r.layers)
    EXPECT_GT(l.ablationPpl, r.basePpl) << "layer " << l.layer; // every layer matters
  for (const HeadScore &h : r.heads) {
    EXPECT_TRUE(std::isfinite(h.entropy));
    EXPECT_EQ(h.kvHead, h.head / 2); // 8 query heads over 4 KV heads
  }
  EXPECT_TRUE(std::isfinite(r.blockInfluenceVsAblation));
  EXPECT_TRUE(std::isfinite(r.gradientVsAblation));
  EXPECT_TRUE(std::isfinite(r.headEntropyVsAblation));

  ReportSource src{model, text, calib.tokens.size(), 0.0};
  std::string json, svg, tables;
  llvm::raw_string_ostream js(json), ss(svg), ts(tables);
  writeImportanceJson(r, src, js);
  writeImportanceSvg(r, src, ss);
  printImportanceTables(r, ts);
  auto parsed = llvm::json::parse(json);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object *root = parsed->getAsObject();
  ASSERT_TRUE(root);
  EXPECT_EQ(root->getArray("layers")->size(), 5u);
  EXPECT_EQ(root->getArray("heads")->size(), 40u);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("Head ablation KLD"), std::string::npos);
  EXPECT_NE(tables.find("rank correlation"), std::string::npos);
}

} // namespace
