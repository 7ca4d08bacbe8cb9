// Modules of a compiled stories260K (kiln/module.h) against the fp32 reference executor on
// merged weights: a LoRA adapter from kiln's generator and a head, compiled with
// `kiln compile --base`, applied to a live session, swapped and removed; every time the
// logits track the reference that merged the same files (`kiln eval --adapter/--head`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "compiler/frontends/gguf/SyntheticGguf.h"
#include "compiler/tools/kiln/Commands.h"
#include "compiler/tools/kiln/ModelSession.h"
#include "kiln/kiln.h"
#include "kiln/module.h"
#include "tests/unit/TestPaths.h"

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("kiln-mvr-" + std::to_string(getpid()) + "-" + name))
      .string();
}

// The reference executor's last-position logits of `prompt` with `edits` merged.
std::vector<float> referenceLogits(const std::string &model, const kiln::tool::ModelEdits &edits,
                                   const std::vector<int32_t> &prompt) {
  kiln::tool::ModelSession ref;
  std::string error;
  EXPECT_TRUE(ref.load(model, error) && ref.applyEdits(edits, error) &&
              ref.prepareExecutor(64, error))
      << error;
  kiln::Matrix out;
  EXPECT_TRUE(ref.executor->forward(prompt, 0, out, error)) << error;
  const float *row = out.row(out.rows() - 1).data();
  return std::vector<float>(row, row + 512);
}

float maxAbsDiff(const float *a, const std::vector<float> &b) {
  float m = 0;
  for (size_t i = 0; i < b.size(); ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

kiln::tool::CompileOptions compileOptions(const std::string &model, const std::string &out) {
  kiln::tool::CompileOptions o;
  o.model = model;
  o.output = out;
  o.prec.weights = "f32";
  o.ctx = 64;
  o.maxBatch = 64;
  o.quiet = true;
  return o;
}

TEST(ModuleVsReference, Stories260KAdapterAndHeadTrackMergedReference) {
  const std::string model = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(model);
  const std::string lora = tempPath("lora.gguf"), head = tempPath("head.gguf"),
                    base = tempPath("base.kiln"), tone = tempPath("tone.kiln"),
                    headModule = tempPath("head.kiln");
  std::string error;
  kiln::llama::SyntheticAdapterOptions ao;
  ao.targets = {"attn_q", "attn_v", "ffn_down"};
  ao.magnitude = 0.1f;
  ASSERT_TRUE(kiln::gguf::writeSyntheticAdapter(model, ao, lora, error)) << error;
  ao.head = true;
  ASSERT_TRUE(kiln::gguf::writeSyntheticAdapter(model, ao, head, error)) << error;

  ASSERT_EQ(kiln::tool::runCompile(compileOptions(model, base)), 0);
  kiln::tool::CompileOptions m = compileOptions(model, tone);
  m.base = base;
  m.edits.adapters = {lora};
  ASSERT_EQ(kiln::tool::runCompile(m), 0);
  m = compileOptions(model, headModule);
  m.base = base;
  m.edits.head = head;
  ASSERT_EQ(kiln::tool::runCompile(m), 0);

  kiln_error_t err{};
  kiln_artifact_t *a = nullptr;
  kiln_session_t *s = nullptr;
  kiln_module_t *adapter = nullptr, *domainHead = nullptr;
  ASSERT_EQ(kiln_artifact_open(base.c_str(), nullptr, &a, &err), KILN_STATUS_OK) << err.message;
  ASSERT_EQ(kiln_module_open(tone.c_str(), nullptr, nullptr, &adapter, &err), KILN_STATUS_OK)
      << err.message;
  ASSERT_EQ(kiln_module_open(headModule.c_str(), nullptr, nullptr, &domainHead, &err),
            KILN_STATUS_OK)
      << err.message;
  kiln_session_options_t so = kiln_session_options_default();
  so.n_threads = 1;
  ASSERT_EQ(kiln_session_create(a, &so, &s, &err), KILN_STATUS_OK) << err.message;
  for (const std::string &p : {base, tone, headModule})
    std::filesystem::remove(p); // mapped: still valid

  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378}; // "Once upon a time"
  auto run = [&](std::vector<const kiln_module_t *> mods) {
    EXPECT_EQ(kiln_session_apply_modules(s, mods.data(), uint32_t(mods.size()), &err),
              KILN_STATUS_OK)
        << err.message;
    kiln_session_reset(s);
    EXPECT_EQ(kiln_session_prefill(s, prompt.data(), prompt.size(), &err), KILN_STATUS_OK)
        << err.message;
    return kiln_session_logits(s);
  };
  kiln::tool::ModelEdits none, withLora, withBoth;
  withLora.adapters = {lora};
  withBoth.adapters = {lora};
  withBoth.head = head;
  const std::vector<float> refBase = referenceLogits(model, none, prompt),
                           refLora = referenceLogits(model, withLora, prompt),
                           refBoth = referenceLogits(model, withBoth, prompt);
  std::filesystem::remove(lora);
  std::filesystem::remove(head);

  const float base0 = maxAbsDiff(run({}), refBase);
  const float adapted = maxAbsDiff(run({adapter}), refLora);
  const float both = maxAbsDiff(run({adapter, domainHead}), refBoth);
  const float removed = maxAbsDiff(run({}), refBase);
  const float effect = maxAbsDiff(refLora.data(), refBase);
  std::cout << "max |logit difference| vs the reference on merged weights: base " << base0
            << ", adapter " << adapted << ", adapter + head " << both << ", removed again "
            << removed << " (the adapter moves logits by up to " << effect << ")\n";
  EXPECT_LE(base0, 1e-4f);
  EXPECT_LE(adapted, 1e-4f);
  EXPECT_LE(both, 1e-4f);
  EXPECT_LE(removed, 1e-4f);
  EXPECT_GT(effect, 0.1f) << "the adapter must change the model for the test to mean anything";

  kiln_session_destroy(s);
  kiln_module_close(adapter);
  kiln_module_close(domainHead);
  kiln_artifact_close(a);
}

} // namespace
