// The compiled artifact, run by runtime-min, against the fp32 reference executor: the
// last-position logits of a prompt agree to 1e-4 (f32 weights), and every position of a
// longer sequence (prefill in several batches, then decode) tracks the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <unistd.h>

#include "compiler/pipelines/Pipeline.h"
#include "dialects/kiln/IR/KvFormat.h"
#include "compiler/tools/kiln/Commands.h"
#include "compiler/tools/kiln/ModelSession.h"
#include "kiln/kiln.h"
#include "compiler/frontends/gguf/SyntheticGguf.h"
#include "tests/unit/TestPaths.h"

extern "C" kiln_status_t kiln_platform_cpu_has(const char *feature, int *out_has);

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("kiln-avr-" + std::to_string(getpid()) + "-" + name))
      .string();
}

struct Compiled {
  kiln::tool::ModelSession ref;
  kiln_artifact_t *artifact = nullptr;
  kiln_session_t *session = nullptr;
  ~Compiled() {
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
  }
};

// Compiles `model` and opens it, with the reference executor beside it (same KV format);
// a `precision` spec (--precision) applies to both.
void compileAndOpen(const std::string &model, const std::string &weights, uint32_t ctx,
                    uint32_t maxBatch, Compiled &c, const std::string &kv = "f32",
                    bool fuseRope = true, const std::string &precision = "",
                    std::optional<uint32_t> l2Kib = std::nullopt,
                    const std::string &target = "host", bool allLogits = false) {
  std::string path = tempPath(target + "-" + weights + ".kiln"), error;
  kiln::KvFormat kvFormat;
  ASSERT_TRUE(kiln::parseKvFormat(kv, kvFormat, error)) << error;
  kiln::tool::CompileOptions o;
  o.model = model;
  o.output = path;
  o.prec.weights = precision.empty() ? weights : "";
  o.prec.precision = precision;
  // The reference predicts the fp32-activation kernels; the r16 layout's integer kernels
  // quantise activations to int8 (bounded in UkernelPackedTest), so mixed maps use rows.
  if (!precision.empty())
    o.layout = "rows64";
  o.ctx = ctx;
  o.maxBatch = maxBatch;
  o.kv = kv;
  o.fusion = fuseRope ? "all" : "qkv,swiglu,norm,residual";
  o.l2Kib = l2Kib;
  o.target = target;
  ASSERT_EQ(kiln::tool::runCompile(o), 0);
  ASSERT_TRUE(c.ref.load(model, error)) << error;
  if (!precision.empty()) {
    std::vector<kiln::pipelines::AppliedPass> records;
    kiln::pipelines::PipelineRequest request;
    ASSERT_TRUE(kiln::tool::runPasses(c.ref, {}, o.prec, request, kiln::pipelines::Stage::Fused,
                                      records, error))
        << error;
  }
  ASSERT_TRUE(c.ref.prepareExecutor(ctx, error, kvFormat)) << error;
  kiln_error_t err{};
  ASSERT_EQ(kiln_artifact_open(path.c_str(), nullptr, &c.artifact, &err), KILN_STATUS_OK)
      << err.message;
  std::filesystem::remove(path); // mapped: stays valid
  kiln_session_options_t so = kiln_session_options_default();
  so.n_threads = 1;
  so.all_logits = allLogits;
  ASSERT_EQ(kiln_session_create(c.artifact, &so, &c.session, &err), KILN_STATUS_OK)
      << err.message;
}

float maxAbsDiff(const float *a, const float *b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(ArtifactVsReference, Stories260KLastLogitsWithin1e4) {
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  Compiled c;
  ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "f32", 128, 128, c));
  std::vector<int32_t> prompt = c.ref.tokenizer->encode("Once upon a time", true);
  ASSERT_EQ(prompt, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  kiln::Matrix ref;
  std::string error;
  ASSERT_TRUE(c.ref.executor->forward(prompt, 0, ref, error)) << error;
  kiln_error_t err{};
  ASSERT_EQ(kiln_session_prefill(c.session, prompt.data(), prompt.size(), &err), KILN_STATUS_OK)
      << err.message;
  float diff = maxAbsDiff(kiln_session_logits(c.session), ref.row(ref.rows() - 1).data(), 512);
  std::cout << "max |logit difference| at the last prompt position: " << diff << "\n";
  EXPECT_LE(diff, 1e-4f);
}

// The reference executor honours each op's storage format (quantise, decode, zero padding
// as the weight layout): a mixed map, f16 norm scales included, predicts the artifact's
// logits to 1e-4, as for f32 (measured: 1.2e-5).
TEST(ArtifactVsReference, Stories260KMixedPrecisionTracksReference) {
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  Compiled c;
  ASSERT_NO_FATAL_FAILURE(compileAndOpen(
      model, "", 64, 64, c, "f32", true,
      "rules:attn_qkv=q4_0,ffn=q8_0,norms=f16,default=q4_1"));
  std::vector<int32_t> prompt = c.ref.tokenizer->encode("Once upon a time", true);
  kiln::Matrix ref;
  std::string error;
  ASSERT_TRUE(c.ref.executor->forward(prompt, 0, ref, error)) << error;
  kiln_error_t err{};
  ASSERT_EQ(kiln_session_prefill(c.session, prompt.data(), prompt.size(), &err), KILN_STATUS_OK)
      << err.message;
  float diff = maxAbsDiff(kiln_session_logits(c.session), ref.row(ref.rows() - 1).data(), 512);
  std::cout << "mixed precision: max |logit difference| at the last prompt position: " << diff
            << "\n";
  EXPECT_LE(diff, 1e-4f);
}

// kiln's q3_0 everywhere (embedding and classifier included): greedy generation from the
// artifact gives the reference's tokens exactly, and every step's logits stay within 1e-4
// of the reference reading the same q3_0 weights.
TEST(ArtifactVsReference, Stories260KQ3_0GreedyTokensExact) {
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  Compiled c;
  ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "", 64, 64, c, "f32", true, "uniform:q3_0"));
  std::vector<int32_t> tokens = c.ref.tokenizer->encode("Once upon a time", true);
  kiln::Matrix ref;
  std::string error;
  ASSERT_TRUE(c.ref.executor->forward(tokens, 0, ref, error)) << error;
  kiln_error_t err{};
  ASSERT_EQ(kiln_session_prefill(c.session, tokens.data(), tokens.size(), &err), KILN_STATUS_OK)
      << err.message;
  auto argmax = [](const float *v, size_t n) {
    return int32_t(std::max_element(v, v + n) - v);
  };
  float worst = maxAbsDiff(kiln_session_logits(c.session), ref.row(ref.rows() - 1).data(), 512);
  std::vector<int32_t> fromArtifact, fromRef;
  for (int step = 0; step < 40; ++step) {
    const int32_t a = argmax(kiln_session_logits(c.session), 512);
    const int32_t r = argmax(ref.row(ref.rows() - 1).data(), 512);
    fromArtifact.push_back(a);
    fromRef.push_back(r);
    ASSERT_EQ(a, r) << "step " << step;
    const uint32_t pos = uint32_t(tokens.size()) + uint32_t(step);
    ASSERT_EQ(kiln_session_decode(c.session, a, &err), KILN_STATUS_OK) << err.message;
    ASSERT_TRUE(c.ref.executor->forward({r}, pos, ref, error)) << error;
    worst = std::max(worst, maxAbsDiff(kiln_session_logits(c.session), ref.row(0).data(), 512));
  }
  EXPECT_EQ(fromArtifact, fromRef);
  std::cout << "q3_0: 40 greedy tokens equal, max |logit difference| " << worst << "\n";
  EXPECT_LE(worst, 1e-4f);
}

// Prefill 11 tokens in batches of 4 (the artifact's max batch), then decode 6; every
// logit row within `bound` of the reference with the same KV format.
void syntheticSequence(const std::string &kv, bool fuseRope, float bound) {
  SCOPED_TRACE("kv " + kv + (fuseRope ? ", rope fused" : ", rope separate"));
  kiln::llama::SyntheticOptions so;
  auto &cfg = so.config;
  cfg.vocabSize = 300, cfg.dim = 48, cfg.numLayers = 2, cfg.numHeads = 6, cfg.numKvHeads = 2;
  cfg.headDim = 8, cfg.ffnDim = 100, cfg.contextLength = 32, cfg.ropeDims = 8;
  std::string model = tempPath("synthetic.gguf"), error;
  ASSERT_TRUE(kiln::gguf::writeSyntheticLlama(so, model, error)) << error;
  Compiled c;
  ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "f32", 32, 4, c, kv, fuseRope));
  std::filesystem::remove(model);
  kiln_artifact_info_t info;
  kiln_artifact_info(c.artifact, &info);
  kiln::KvFormat f;
  ASSERT_TRUE(kiln::parseKvFormat(kv, f, error));
  EXPECT_EQ(info.kv_k_format, uint32_t(f.k));
  EXPECT_EQ(info.kv_v_format, uint32_t(f.v));
  EXPECT_EQ(info.kv_bytes_per_token, 2 * kiln::kvBytesPerTokenLayer(f, 2, 8));

  std::vector<int32_t> tokens = {1, 270, 5, 299, 42, 260, 261, 3, 100, 200, 7};
  kiln::Matrix ref;
  ASSERT_TRUE(c.ref.executor->forward(tokens, 0, ref, error)) << error;
  kiln_error_t err{};
  ASSERT_EQ(kiln_session_prefill(c.session, tokens.data(), tokens.size(), &err), KILN_STATUS_OK)
      << err.message;
  float worst = maxAbsDiff(kiln_session_logits(c.session), ref.row(10).data(), 300);
  for (int32_t step = 0; step < 6; ++step) {
    int32_t next = 259 + step * 7;
    ASSERT_EQ(kiln_session_decode(c.session, next, &err), KILN_STATUS_OK) << err.message;
    ASSERT_TRUE(c.ref.executor->forward({next}, uint32_t(tokens.size()) + step, ref, error))
        << error;
    float d = maxAbsDiff(kiln_session_logits(c.session), ref.row(0).data(), 300);
    EXPECT_LE(d, bound) << "decode step " << step;
    worst = std::max(worst, d);
  }
  EXPECT_LE(worst, bound);
  std::cout << "kv " << kv << (fuseRope ? " fused" : " separate")
            << ": max |logit difference| " << worst << "\n";
}

TEST(ArtifactVsReference, SyntheticGqaSequenceTracksReference) {
  syntheticSequence("f32", false, 1e-4f);
  syntheticSequence("f32", true, 1e-4f);
}

// Llama 3 RoPE scaling (rope_freqs) reaches the artifact's tables: 300 positions of a model
// whose original context is 64, prefilled in batches of 32 then decoded, track the
// reference (which tests/e2e/llamacpp_rope.py holds against llama.cpp) with the rope
// separate and fused into attention.
TEST(ArtifactVsReference, SyntheticLlama3RopePastOriginalContext) {
  for (bool fuseRope : {false, true}) {
    SCOPED_TRACE(fuseRope ? "rope fused" : "rope separate");
    kiln::llama::SyntheticOptions so;
    auto &cfg = so.config;
    cfg.vocabSize = 300, cfg.dim = 64, cfg.numLayers = 2, cfg.numHeads = 4, cfg.numKvHeads = 2;
    cfg.headDim = 16, cfg.ffnDim = 96, cfg.contextLength = 512, cfg.ropeDims = 16;
    cfg.ropeTheta = 500000.0f;
    kiln::llama::Llama3RopeScaling scaling;
    scaling.originalContext = 64;
    cfg.ropeFreqFactors = kiln::llama::llama3RopeFreqFactors(cfg.ropeTheta, 16, scaling);
    ASSERT_EQ(cfg.ropeFreqFactors.back(), 8.0f);
    std::string model = tempPath("llama3-rope.gguf"), error;
    ASSERT_TRUE(kiln::gguf::writeSyntheticLlama(so, model, error)) << error;
    Compiled c;
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "f32", 320, 32, c, "f32", fuseRope));
    std::filesystem::remove(model);

    std::vector<int32_t> tokens;
    for (int32_t i = 0; i < 300; ++i)
      tokens.push_back(3 + (i * 7919) % 297);
    kiln::Matrix ref;
    ASSERT_TRUE(c.ref.executor->forward(tokens, 0, ref, error)) << error;
    kiln_error_t err{};
    ASSERT_EQ(kiln_session_prefill(c.session, tokens.data(), tokens.size(), &err),
              KILN_STATUS_OK)
        << err.message;
    float worst = maxAbsDiff(kiln_session_logits(c.session), ref.row(299).data(), 300);
    for (int32_t step = 0; step < 4; ++step) {
      ASSERT_EQ(kiln_session_decode(c.session, 10 + step, &err), KILN_STATUS_OK) << err.message;
      ASSERT_TRUE(c.ref.executor->forward({10 + step}, 300u + step, ref, error)) << error;
      worst = std::max(worst, maxAbsDiff(kiln_session_logits(c.session), ref.row(0).data(), 300));
    }
    std::cout << "llama3 rope" << (fuseRope ? " fused" : " separate")
              << ": max |logit difference| " << worst << "\n";
    EXPECT_LE(worst, 1e-4f);
  }
}

// With a rounded cache a float-rounding difference upstream (the artifact's FMA linear vs
// Eigen's) can land a stored value on the other side of an f16 or int8 rounding step: one
// step of f16 (2^-11 relative) moved stories260K's logits by 4.6e-4, so the bound is 1e-3.
constexpr float kRoundedKvBound = 1e-3f;

TEST(ArtifactVsReference, SyntheticGqaSequenceEveryKvFormat) {
  for (const char *kv : {"f16", "k=int8,v=f16", "k=int8,v=f32", "k=f16,v=f32"})
    for (bool fuse : {false, true})
      syntheticSequence(kv, fuse, kRoundedKvBound);
}

TEST(ArtifactVsReference, Stories260KSplitKvLastLogits) {
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  for (const char *kv : {"f16", "k=int8,v=f16"}) {
    SCOPED_TRACE(kv);
    Compiled c;
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "f32", 128, 128, c, kv));
    std::vector<int32_t> prompt = c.ref.tokenizer->encode("Once upon a time there was", true);
    kiln::Matrix ref;
    std::string error;
    ASSERT_TRUE(c.ref.executor->forward(prompt, 0, ref, error)) << error;
    kiln_error_t err{};
    ASSERT_EQ(kiln_session_prefill(c.session, prompt.data(), prompt.size(), &err),
              KILN_STATUS_OK)
        << err.message;
    float diff = maxAbsDiff(kiln_session_logits(c.session), ref.row(ref.rows() - 1).data(), 512);
    std::cout << "kv " << kv << ": max |logit difference| " << diff << "\n";
    EXPECT_LE(diff, kRoundedKvBound);
  }
}

// kiln-size-prefill-panels splits a long prefill into token panels (here a 16 KiB cache:
// 24 and 64 tokens); every logit of the prompt's last position and of the decode steps
// after it must be bit for bit the logits of the unsplit artifact, for the r16 integer
// kernels (q4_0, fused) and the fp32 row kernels (f32).
TEST(ArtifactVsReference, Stories260KPrefillPanelsBitExact) {
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  for (const char *weights : {"q4_0", "f32"}) {
    SCOPED_TRACE(weights);
    Compiled whole, split;
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, weights, 256, 128, whole, "f32", true, "", 0u));
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, weights, 256, 128, split, "f32", true, "", 16u));
    std::string text;
    for (int i = 0; i < 8; ++i)
      text += "Once upon a time, there was a little girl who liked to play in the park. ";
    std::vector<int32_t> prompt = whole.ref.tokenizer->encode(text, true);
    prompt.resize(std::min<size_t>(prompt.size(), 120));
    ASSERT_GT(prompt.size(), 64u); // more than the largest panel
    kiln_error_t err{};
    for (kiln_session_t *s : {whole.session, split.session})
      ASSERT_EQ(kiln_session_prefill(s, prompt.data(), prompt.size(), &err), KILN_STATUS_OK)
          << err.message;
    for (int step = 0; step < 16; ++step) {
      const float *a = kiln_session_logits(whole.session), *b = kiln_session_logits(split.session);
      ASSERT_EQ(std::memcmp(a, b, 512 * sizeof(float)), 0) << "step " << step;
      const int32_t next = int32_t(std::max_element(a, a + 512) - a);
      for (kiln_session_t *s : {whole.session, split.session})
        ASSERT_EQ(kiln_session_decode(s, next, &err), KILN_STATUS_OK) << err.message;
    }
  }
}

// A session without options.all_logits computes the output matrix for a batch's last
// position only; that row must be the bits of the all-rows session's last row, and the
// other rows are not handed out.
TEST(ArtifactVsReference, Stories260KLastRowOnlyLogitsBitExact) {
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  for (const char *weights : {"q4_0", "q8_0", "f16", "f32"}) {
    SCOPED_TRACE(weights);
    Compiled all;
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, weights, 256, 128, all, "f32", true, "",
                                           std::nullopt, "host", true));
    kiln_session_options_t so = kiln_session_options_default();
    so.n_threads = 1;
    kiln_session_t *last = nullptr;
    kiln_error_t err{};
    ASSERT_EQ(kiln_session_create(all.artifact, &so, &last, &err), KILN_STATUS_OK)
        << err.message;
    std::unique_ptr<kiln_session_t, void (*)(kiln_session_t *)> own(last, kiln_session_destroy);
    std::string text;
    for (int i = 0; i < 8; ++i)
      text += "Once upon a time, there was a little girl who liked to play in the park. ";
    std::vector<int32_t> prompt = all.ref.tokenizer->encode(text, true);
    prompt.resize(std::min<size_t>(prompt.size(), 120));
    for (kiln_session_t *s : {all.session, last})
      ASSERT_EQ(kiln_session_prefill(s, prompt.data(), prompt.size(), &err), KILN_STATUS_OK)
          << err.message;
    uint32_t rows = 0, rowsLast = 7;
    const float *every = kiln_session_batch_logits(all.session, &rows, nullptr);
    ASSERT_EQ(rows, prompt.size());
    EXPECT_EQ(kiln_session_batch_logits(last, &rowsLast, nullptr), nullptr);
    EXPECT_EQ(rowsLast, 0u);
    ASSERT_EQ(std::memcmp(every + size_t(rows - 1) * 512, kiln_session_logits(last),
                          512 * sizeof(float)),
              0)
        << "prefill: worst difference "
        << maxAbsDiff(every + size_t(rows - 1) * 512, kiln_session_logits(last), 512);
    for (int step = 0; step < 4; ++step) {
      const float *a = kiln_session_logits(all.session);
      ASSERT_EQ(std::memcmp(a, kiln_session_logits(last), 512 * sizeof(float)), 0)
          << "decode step " << step;
      const int32_t next = int32_t(std::max_element(a, a + 512) - a);
      for (kiln_session_t *s : {all.session, last})
        ASSERT_EQ(kiln_session_decode(s, next, &err), KILN_STATUS_OK) << err.message;
    }
  }
}

bool cpuHas(const char *feature) {
  int has = 0;
  return kiln_platform_cpu_has(feature, &has) == KILN_STATUS_OK && has;
}

// Every logit of every prompt position, then 16 decode steps, of two targets' artifacts for
// each packed format and f16: the same bits.
void expectTargetsBitExact(const std::string &model, const char *baseTarget,
                           const char *target) {
  for (const char *weights : {"q4_0", "q4_1", "q8_0", "f16"}) {
    SCOPED_TRACE(weights);
    Compiled base, other;
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, weights, 256, 128, base, "f32", true, "",
                                           std::nullopt, baseTarget, true));
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, weights, 256, 128, other, "f32", true, "",
                                           std::nullopt, target, true));
    std::string text;
    for (int i = 0; i < 8; ++i)
      text += "Once upon a time, there was a little girl who liked to play in the park. ";
    std::vector<int32_t> prompt = base.ref.tokenizer->encode(text, true);
    prompt.resize(std::min<size_t>(prompt.size(), 120));
    ASSERT_EQ(prompt.size(), 120u);
    kiln_error_t err{};
    for (kiln_session_t *s : {base.session, other.session})
      ASSERT_EQ(kiln_session_prefill(s, prompt.data(), prompt.size(), &err), KILN_STATUS_OK)
          << err.message;
    uint32_t rowsB = 0, rowsO = 0;
    const float *a = kiln_session_batch_logits(base.session, &rowsB, nullptr);
    const float *b = kiln_session_batch_logits(other.session, &rowsO, nullptr);
    ASSERT_EQ(rowsB, 120u);
    ASSERT_EQ(rowsO, 120u);
    ASSERT_EQ(std::memcmp(a, b, size_t(120) * 512 * sizeof(float)), 0) << "prefill logits";
    for (int step = 0; step < 16; ++step) {
      a = kiln_session_logits(base.session);
      b = kiln_session_logits(other.session);
      ASSERT_EQ(std::memcmp(a, b, 512 * sizeof(float)), 0) << "decode step " << step;
      const int32_t next = int32_t(std::max_element(a, a + 512) - a);
      for (kiln_session_t *s : {base.session, other.session})
        ASSERT_EQ(kiln_session_decode(s, next, &err), KILN_STATUS_OK) << err.message;
    }
  }
}

// The x86-64-v4-amx target's kernels give the same bits as x86-64-v4-vnni's: prefill of
// the r16 formats as AMX tile multiplies (16 tokens a tile; 120 tokens also leave a
// remainder for the VNNI tile) applies the block scales with the VNNI tile's float steps,
// and f16 decode's 8-row tile (AMX targets) runs each row's chain of the row-by-row order
// (the other targets with AVX-512). Needs a CPU (and OS) with AMX.
TEST(ArtifactVsReference, Stories260KAmxTargetBitExactWithVnni) {
  if (!cpuHas("avx512vnni") || !cpuHas("amx-tile") || !cpuHas("amx-int8") || !cpuHas("gfni"))
    GTEST_SKIP() << "this CPU or OS has no AMX (amx-tile, amx-int8) or no GFNI";
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  expectTargetsBitExact(model, "x86-64-v4-vnni", "x86-64-v4-amx");
}

// The x86-64-v3-vnni target (AVX-VNNI's 256-bit vpdpbusd) gives the same bits as
// x86-64-v3's (vpmaddubsw): both kernels' integer sums are exact and the float steps are
// the same. Where the CPU has no AVX-VNNI, the runtime refuses the artifact, naming it.
TEST(ArtifactVsReference, Stories260KAvxVnniTargetBitExactWithV3OrRefused) {
  if (!cpuHas("avx2") || !cpuHas("fma") || !cpuHas("f16c") || !cpuHas("bmi2"))
    GTEST_SKIP() << "not an x86-64-v3 CPU: the refusal would name another feature first";
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  if (cpuHas("avxvnni")) {
    expectTargetsBitExact(model, "x86-64-v3", "x86-64-v3-vnni");
    return;
  }
  kiln::tool::CompileOptions o;
  o.model = model;
  o.output = tempPath("x86-64-v3-vnni-refused.kiln");
  o.prec.weights = "q4_0";
  o.ctx = 128;
  o.target = "x86-64-v3-vnni";
  ASSERT_EQ(kiln::tool::runCompile(o), 0);
  kiln_artifact_t *artifact = nullptr;
  kiln_error_t err{};
  EXPECT_EQ(kiln_artifact_open(o.output.c_str(), nullptr, &artifact, &err),
            KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(err.message).find("'avxvnni', which this CPU lacks"), std::string::npos)
      << err.message;
  kiln_artifact_close(artifact);
  std::filesystem::remove(o.output);
}

// Two artifacts loaded in one process each run their own code. The dynamic loader hands
// back an object already loaded under the same path, and a memfd closed after dlopen
// gave the next artifact the same /proc/self/fd/N: the q4_0 artifact, opened after an f32
// one, ran the f32 code on its q4_0 weights (runtime-min/src/platform/code_posix.c).
TEST(ArtifactVsReference, TwoArtifactsInOneProcessRunTheirOwnCode) {
  std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  kiln_error_t err{};
  std::vector<float> alone(512);
  {
    Compiled q;
    ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "q4_0", 128, 128, q));
    ASSERT_EQ(kiln_session_prefill(q.session, prompt.data(), prompt.size(), &err),
              KILN_STATUS_OK)
        << err.message;
    std::memcpy(alone.data(), kiln_session_logits(q.session), 512 * sizeof(float));
  }
  Compiled f, q;
  ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "f32", 128, 128, f));
  ASSERT_NO_FATAL_FAILURE(compileAndOpen(model, "q4_0", 128, 128, q));
  for (kiln_session_t *s : {f.session, q.session})
    ASSERT_EQ(kiln_session_prefill(s, prompt.data(), prompt.size(), &err), KILN_STATUS_OK)
        << err.message;
  EXPECT_EQ(std::memcmp(alone.data(), kiln_session_logits(q.session), 512 * sizeof(float)), 0)
      << "the q4_0 artifact opened after the f32 one gives other logits than alone";
  EXPECT_GT(maxAbsDiff(kiln_session_logits(f.session), alone.data(), 512), 0.0f);
}

} // namespace
