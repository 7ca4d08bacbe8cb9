// The reference executor is the oracle for everything later, so it is checked against
// itself (prefill == token-by-token decode), against hand-computed math for the ops
// with conventions (RoPE pairing, grouped-query attention), and for its error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <unistd.h>

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "compiler/InitAll.h"
#include "compiler/eval/OpKernels.h"
#include "compiler/eval/Perplexity.h"
#include "compiler/eval/RefExecutor.h"
#include "compiler/eval/Sampler.h"
#include "compiler/frontends/gguf/GgufImport.h"
#include "kiln/quant.h"
#include "models/weights/DerivedWeights.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "mlir/Pass/PassManager.h"
#include "passes/fusion/LinearFusionPasses.h"
#include "compiler/frontends/gguf/SyntheticGguf.h"
#include "passes/fusion/Passes.h"

namespace {

using kiln::Matrix;

struct Model {
  mlir::MLIRContext ctx;
  kiln::gguf::ImportedModel imported;
  std::unique_ptr<kiln::RefExecutor> exec;
};

std::unique_ptr<Model> syntheticModel(uint32_t maxCtx, uint32_t heads = 4, uint32_t kvHeads = 2) {
  kiln::llama::SyntheticOptions o;
  auto &c = o.config;
  c.vocabSize = 300;
  c.dim = 32;
  c.numLayers = 2;
  c.numHeads = heads;
  c.numKvHeads = kvHeads;
  c.headDim = 32 / heads;
  c.ffnDim = 48;
  c.contextLength = 64;
  c.ropeDims = c.headDim;
  std::string path = (std::filesystem::temp_directory_path() /
                      ("kiln-exec-test-" + std::to_string(getpid()) + ".gguf"))
                         .string();
  std::string error;
  EXPECT_TRUE(kiln::gguf::writeSyntheticLlama(o, path, error)) << error;
  auto m = std::make_unique<Model>();
  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  m->ctx.appendDialectRegistry(registry);
  EXPECT_TRUE(kiln::gguf::importGguf(path, m->ctx, m->imported, error)) << error;
  std::filesystem::remove(path); // the mapping stays valid after unlink
  m->exec = kiln::RefExecutor::create(*m->imported.module, m->imported.weights, maxCtx, error);
  EXPECT_TRUE(m->exec) << error;
  return m;
}

TEST(RefExecutor, PrefillEqualsTokenByTokenDecode) {
  auto m = syntheticModel(32);
  std::vector<int32_t> tokens = {1, 260, 270, 281, 5, 299, 100, 42};
  Matrix all, one;
  std::string error;
  ASSERT_TRUE(m->exec->forward(tokens, 0, all, error)) << error;
  m->exec->resetCache();
  for (uint32_t i = 0; i < tokens.size(); ++i) {
    ASSERT_TRUE(m->exec->forward({tokens[i]}, i, one, error)) << error;
    EXPECT_LT((one.row(0) - all.row(i)).cwiseAbs().maxCoeff(), 1e-5f) << "position " << i;
  }
  // Split prefill: 3 tokens, then 5 more on top of the cache.
  m->exec->resetCache();
  Matrix a, b;
  ASSERT_TRUE(m->exec->forward({tokens.begin(), tokens.begin() + 3}, 0, a, error));
  ASSERT_TRUE(m->exec->forward({tokens.begin() + 3, tokens.end()}, 3, b, error));
  EXPECT_LT((b.row(4) - all.row(7)).cwiseAbs().maxCoeff(), 1e-5f);
}

// The model's module with the four fusion passes run on a clone; null if they fail.
mlir::OwningOpRef<mlir::ModuleOp> fusedClone(Model &m) {
  mlir::OwningOpRef<mlir::ModuleOp> fused(m.imported.module->clone());
  mlir::PassManager pm(&m.ctx);
  pm.addPass(kiln::createKilnFoldNormIntoLinear());
  pm.addPass(kiln::createKilnFuseSwiGlu());
  pm.addPass(kiln::createKilnFuseQkv());
  pm.addPass(kiln::createKilnFuseResidualAdd());
  if (mlir::failed(pm.run(*fused)))
    return nullptr;
  return fused;
}

// The fusion passes change only where things are computed: the executor runs the fused
// ops (fused_linear with segments, residual and swiglu; rms_normalize) and tracks the
// unfused model through a prefill and two decode steps.
TEST(RefExecutor, FusedModuleTracksUnfused) {
  auto m = syntheticModel(32);
  mlir::OwningOpRef<mlir::ModuleOp> fused = fusedClone(*m);
  ASSERT_TRUE(fused);
  int normalize = 0, swiglu = 0, qkv = 0, residual = 0;
  fused->walk([&](mlir::Operation *op) {
    normalize += mlir::isa<kiln::RmsNormalizeOp>(op);
    if (auto f = mlir::dyn_cast<kiln::FusedLinearOp>(op)) {
      swiglu += f.getSwiglu();
      qkv += f.getNumResults() == 3;
      residual += bool(f.getResidual());
    }
  });
  EXPECT_EQ(normalize, 5); // 2 per layer + the output norm
  EXPECT_EQ(swiglu, 2);
  EXPECT_EQ(qkv, 2);
  EXPECT_EQ(residual, 4);
  std::string error;
  ASSERT_TRUE(kiln::materializeDerivedWeights(*fused, m->imported.weights, error)) << error;
  auto exec = kiln::RefExecutor::create(*fused, m->imported.weights, 32, error);
  ASSERT_TRUE(exec) << error;
  const std::vector<std::vector<int32_t>> calls = {{1, 260, 270, 281, 5}, {299}, {100}};
  uint32_t pos = 0;
  for (const auto &tokens : calls) {
    Matrix want, got;
    ASSERT_TRUE(m->exec->forward(tokens, pos, want, error)) << error;
    ASSERT_TRUE(exec->forward(tokens, pos, got, error)) << error;
    EXPECT_LE((want - got).cwiseAbs().maxCoeff(), 1e-4f) << "at position " << pos;
    pos += uint32_t(tokens.size());
  }
}

// kiln compile builds each derived weight when the layout packs it and drops it after
// (materializeDerivedWeight): the same values as building them all, nothing left behind.
TEST(RefExecutor, DerivedWeightsOneAtATimeMatchAll) {
  auto m = syntheticModel(32);
  mlir::OwningOpRef<mlir::ModuleOp> fused = fusedClone(*m);
  ASSERT_TRUE(fused);
  kiln::WeightStore &store = m->imported.weights;
  std::set<std::string> read;
  fused->walk([&](mlir::Operation *op) {
    if (auto w = op->getAttrOfType<mlir::StringAttr>("weight"))
      if (!store.find(w.str()))
        read.insert(w.str());
  });
  ASSERT_GE(read.size(), 4u); // per layer: the stacked qkv and gate/up
  const size_t before = store.all().size();
  std::string error;
  std::map<std::string, std::vector<float>> one;
  for (const std::string &name : read) {
    ASSERT_TRUE(kiln::materializeDerivedWeight(*fused, name, store, error)) << error;
    EXPECT_EQ(store.all().size(), before + 1) << name << ": intermediates left behind";
    ASSERT_TRUE(store.dequantize(name, one[name], error)) << error;
    store.remove(name);
  }
  ASSERT_TRUE(kiln::materializeDerivedWeights(*fused, store, error)) << error;
  for (const std::string &name : read) {
    std::vector<float> all;
    ASSERT_TRUE(store.dequantize(name, all, error)) << error;
    EXPECT_EQ(one[name], all) << name;
  }
  EXPECT_FALSE(kiln::materializeDerivedWeight(*fused, "no.such.weight", store, error));
  EXPECT_NE(error.find("'no.such.weight' is not in the weight store and has no recipe"),
            std::string::npos)
      << error;
}

// Calibrated rounding encodes derived weights (a rotated or pruned matrix) once they are
// built; building them again from the same recipes must keep them and their encodings,
// and a changed recipe must rebuild them without the stale encoding.
TEST(RefExecutor, MaterializingAgainKeepsEncodings) {
  auto m = syntheticModel(32);
  mlir::OwningOpRef<mlir::ModuleOp> fused = fusedClone(*m);
  ASSERT_TRUE(fused);
  kiln::WeightStore &store = m->imported.weights;
  std::string error;
  ASSERT_TRUE(kiln::materializeDerivedWeights(*fused, store, error)) << error;
  std::string name;
  fused->walk([&](mlir::Operation *op) {
    if (auto w = op->getAttrOfType<mlir::StringAttr>("weight"))
      if (name.empty() && w.str().find("fused") != std::string::npos)
        name = w.str();
  });
  if (name.empty())
    fused->walk([&](mlir::Operation *op) {
      if (auto w = op->getAttrOfType<mlir::StringAttr>("weight"))
        if (name.empty() && store.builtFrom(w.str()))
          name = w.str();
    });
  ASSERT_FALSE(name.empty());
  kiln::WeightEncoding enc;
  enc.format = KILN_GGML_TYPE_Q8_0;
  enc.method = "gptq";
  enc.bytes = {1, 2, 3};
  store.setEncoding(name, enc);
  ASSERT_TRUE(kiln::materializeDerivedWeights(*fused, store, error)) << error;
  EXPECT_NE(store.encoding(name, KILN_GGML_TYPE_Q8_0), nullptr) << name;
  mlir::Builder b(fused->getContext());
  kiln::addDerivedWeight(
      *fused, name,
      kiln::derivedRecipe(fused->getContext(), kiln::DeriveOp::scale,
                          {b.getNamedAttr("source", b.getStringAttr("token_embd.weight")),
                           b.getNamedAttr("factor", b.getF32FloatAttr(2.0f))}));
  ASSERT_TRUE(kiln::materializeDerivedWeights(*fused, store, error)) << error;
  EXPECT_EQ(store.encoding(name, KILN_GGML_TYPE_Q8_0), nullptr) << name;
}

TEST(RefExecutor, RejectsBadPositionsAndIds) {
  auto m = syntheticModel(8);
  Matrix out;
  std::string error;
  EXPECT_FALSE(m->exec->forward(std::vector<int32_t>(9, 1), 0, out, error));
  EXPECT_NE(error.find("exceed the context size 8"), std::string::npos) << error;
  EXPECT_FALSE(m->exec->forward({300}, 0, out, error));
  EXPECT_NE(error.find("token id 300 is outside the vocabulary"), std::string::npos) << error;
  m->exec->resetCache();
  EXPECT_FALSE(m->exec->forward({1}, 5, out, error));
  EXPECT_NE(error.find("holds 0 positions but decoding starts at 5"), std::string::npos)
      << error;
  EXPECT_FALSE(m->exec->forward({}, 0, out, error));
}

// kiln-fuse-rope-into-attention moves the rotation into the attention op; the executor
// runs the fused op with the same math, so logits are bit-identical, for every KV format.
TEST(RefExecutor, FusedRopeEqualsSeparateRope) {
  auto m = syntheticModel(32);
  std::vector<int32_t> tokens = {1, 260, 270, 281, 5, 299, 100, 42};
  mlir::OwningOpRef<mlir::ModuleOp> fused = m->imported.module->clone();
  mlir::PassManager pm(&m->ctx);
  pm.addPass(kiln::createKilnFuseRopeIntoAttention());
  ASSERT_TRUE(mlir::succeeded(pm.run(*fused)));
  int ropes = 0, fusedAttention = 0;
  fused->walk([&](mlir::Operation *op) {
    ropes += op->getName().getStringRef() == "kiln.rope";
    fusedAttention += op->hasAttr("rope_theta");
  });
  EXPECT_EQ(ropes, 0);
  EXPECT_EQ(fusedAttention, 2);
  using kiln::KvElem;
  for (kiln::KvFormat kv : {kiln::KvFormat{KvElem::F32, KvElem::F32},
                            kiln::KvFormat{KvElem::I8, KvElem::F16}}) {
    std::string error;
    auto plain = kiln::RefExecutor::create(*m->imported.module, m->imported.weights, 32, error, kv);
    auto withFusion = kiln::RefExecutor::create(*fused, m->imported.weights, 32, error, kv);
    ASSERT_TRUE(plain && withFusion) << error;
    Matrix a, b;
    ASSERT_TRUE(plain->forward(tokens, 0, a, error)) << error;
    ASSERT_TRUE(withFusion->forward(tokens, 0, b, error)) << error;
    EXPECT_EQ(a, b) << kiln::kvFormatName(kv);
    ASSERT_TRUE(plain->forward({7}, 8, a, error)) << error;
    ASSERT_TRUE(withFusion->forward({7}, 8, b, error)) << error;
    EXPECT_EQ(a, b) << kiln::kvFormatName(kv) << " decode";
  }
}

// int8 K is symmetric per token and KV head: scale max|k| / 127, ties to even, and a head
// of zeros stays zero; f16 rounds to nearest even.
TEST(OpKernels, RoundKvRow) {
  // head 0: max |k| = 127 gives scale 1, so the ties are exact; head 1 is all zeros
  std::vector<float> row = {127.0f, -63.5f, 0.5f, 2.5f, 0.0f, 0.0f, 0.0f, 0.0f};
  kiln::roundKvRow(kiln::KvElem::I8, 4, row.data(), 8);
  EXPECT_EQ(row, (std::vector<float>{127.0f, -64.0f, 0.0f, 2.0f, 0.0f, 0.0f, 0.0f, 0.0f}));
  std::vector<float> small = {0.254f, -0.1f};
  kiln::roundKvRow(kiln::KvElem::I8, 2, small.data(), 2);
  const float s = 0.254f / 127.0f;
  EXPECT_EQ(small[0], 127.0f * s);
  EXPECT_EQ(small[1], std::nearbyint(-0.1f * (1.0f / s)) * s);
  std::vector<float> h = {1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f, 65519.0f, 1e-8f};
  kiln::roundKvRow(kiln::KvElem::F16, 4, h.data(), 4);
  EXPECT_EQ(h, (std::vector<float>{1.0f, 1.0f + 2.0f / 1024.0f, 65504.0f, 0.0f}));
}

TEST(RefExecutor, RejectsAbsurdContext) {
  auto m = syntheticModel(8);
  std::string error;
  EXPECT_FALSE(kiln::RefExecutor::create(*m->imported.module, m->imported.weights, 0, error));
  EXPECT_NE(error.find("out of range"), std::string::npos);
}

TEST(OpKernels, RopePairings) {
  // One head of 4: adjacent rotates (0,1),(2,3); rotate_half rotates (0,2),(1,3).
  Matrix x(1, 4);
  x << 1, 2, 3, 4;
  std::vector<int32_t> pos = {3};
  const float theta = 100.0f, a0 = 3.0f, a1 = 3.0f * std::pow(theta, -0.5f);
  Matrix out;
  kiln::applyRope(x, pos, {4, 4, theta, false}, out);
  EXPECT_NEAR(out(0, 0), 1 * std::cos(a0) - 2 * std::sin(a0), 1e-6);
  EXPECT_NEAR(out(0, 1), 1 * std::sin(a0) + 2 * std::cos(a0), 1e-6);
  EXPECT_NEAR(out(0, 2), 3 * std::cos(a1) - 4 * std::sin(a1), 1e-6);
  EXPECT_NEAR(out(0, 3), 3 * std::sin(a1) + 4 * std::cos(a1), 1e-6);
  kiln::applyRope(x, pos, {4, 4, theta, true}, out);
  EXPECT_NEAR(out(0, 0), 1 * std::cos(a0) - 3 * std::sin(a0), 1e-6);
  EXPECT_NEAR(out(0, 2), 1 * std::sin(a0) + 3 * std::cos(a0), 1e-6);
  EXPECT_NEAR(out(0, 1), 2 * std::cos(a1) - 4 * std::sin(a1), 1e-6);
  EXPECT_NEAR(out(0, 3), 2 * std::sin(a1) + 4 * std::cos(a1), 1e-6);
  // Partial rotation leaves the tail alone.
  kiln::applyRope(x, pos, {4, 2, theta, false}, out);
  EXPECT_EQ(out(0, 2), 3.0f);
  EXPECT_EQ(out(0, 3), 4.0f);
}

TEST(OpKernels, GroupedQueryAttentionMatchesNaive) {
  // 4 query heads share 2 KV heads of width 2; 3 tokens, causal.
  const int T = 3, H = 4, G = 2, D = 2;
  Matrix q = Matrix::Random(T, H * D), k = Matrix::Random(T, G * D), v = Matrix::Random(T, G * D);
  kiln::KvCache cache{Matrix::Zero(8, G * D), Matrix::Zero(8, G * D), 0, {}};
  kiln::AttentionParams p{H, G, D, 0.7f, {0, 0, 1, 1}};
  Matrix out;
  std::string error;
  ASSERT_TRUE(kiln::attention(q, k, v, {0, 1, 2}, p, cache, out, error)) << error;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      int g = h / 2;
      std::vector<double> w(t + 1);
      double sum = 0;
      for (int j = 0; j <= t; ++j) {
        double s = 0;
        for (int d = 0; d < D; ++d)
          s += q(t, h * D + d) * k(j, g * D + d);
        sum += w[j] = std::exp(0.7 * s);
      }
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (int j = 0; j <= t; ++j)
          o += w[j] / sum * v(j, g * D + d);
        EXPECT_NEAR(out(t, h * D + d), o, 1e-5) << "t=" << t << " h=" << h;
      }
    }
  EXPECT_EQ(cache.length, 3u);
}

TEST(Perplexity, ChunksAndScoredPositionsFollowLlamaCpp) {
  auto m = syntheticModel(16);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 50; ++i)
    tokens.push_back(259 + i % 41);
  kiln::PerplexityResult r;
  std::string error;
  ASSERT_TRUE(kiln::perplexity(*m->exec, m->exec.get(), tokens, 1, 16, 0, r, error)) << error;
  EXPECT_EQ(r.chunks, 3u);                  // floor(50 / 16)
  EXPECT_EQ(r.scored, 3u * (16 - 1 - 8));   // positions 8..14 of each chunk
  EXPECT_GT(r.ppl, 1.0);
  EXPECT_NEAR(r.meanKld, 0.0, 1e-9);        // a model against itself
  EXPECT_EQ(r.top1Agreement, 1.0);
  EXPECT_FALSE(kiln::perplexity(*m->exec, nullptr, {1, 2, 3}, 1, 16, 0, r, error));
}

TEST(Sampler, GreedyTopKAndSeeds) {
  std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(kiln::argmax(logits.data(), 4), 1); // lowest id on ties
  kiln::Sampler topOne({1.0f, 1, 1.0f, 5});
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(topOne.sample(logits.data(), 4), 1);
  kiln::Sampler a({1.0f, 0, 1.0f, 42}), b({1.0f, 0, 1.0f, 42});
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(a.sample(logits.data(), 4), b.sample(logits.data(), 4));
}

} // namespace
