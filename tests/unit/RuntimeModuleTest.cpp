// Modules (kiln/module.h) on the fake artifact: the fake code adds the uint32 at byte 12 of
// the weights ("probe") to logit 0, so a test sees which bytes a session reads. The base
// here lists bytes [0, 64) as tensor "fake.probe"; modules replace it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kiln/module.h"
#include "tests/unit/RuntimeFakeArtifact.h"

namespace {

using kiln::test::TempFile;

// "fake.probe": bytes [0, 64); "fake.wide": [0, 8192), two whole pages of the view.
kiln::artifact::TensorRecord probeRecord(uint64_t bytes = 64) {
  kiln::artifact::TensorRecord t;
  t.name = bytes == 64 ? "fake.probe" : "fake.wide";
  t.shape = {bytes / 4};
  t.paddedRowLength = bytes / 4;
  t.rowStride = bytes;
  t.offset = 0;
  t.size = bytes;
  return t;
}

kiln::artifact::ArtifactContents baseContents() {
  kiln::artifact::ArtifactContents c = kiln::test::fakeContents();
  c.tensors.push_back(probeRecord());
  c.tensors.push_back(probeRecord(8192));
  EXPECT_GE(c.weights.size(), 8192u);
  return c;
}

// A module of `base` whose probe tensor holds `probe` (no tensor when probe < 0).
kiln::artifact::ArtifactContents moduleContents(const kiln::artifact::ArtifactContents &base,
                                                int64_t probe, const std::string &name,
                                                std::vector<int32_t> bans = {},
                                                uint64_t bytes = 64) {
  kiln::artifact::ArtifactContents m;
  m.target = base.target;
  m.config = base.config;
  kiln::artifact::ModuleRecord r;
  r.kind = probe >= 0 ? "adapter" : "filter";
  r.name = name;
  r.baseWeightsXxh64 = kiln_xxh64(base.weights.data(), base.weights.size());
  r.baseWeightsSize = base.weights.size();
  r.bannedTokens = std::move(bans);
  m.module = r;
  if (probe >= 0) {
    m.weights.assign(base.weights.begin(), base.weights.begin() + int64_t(bytes));
    const uint32_t v = uint32_t(probe);
    std::memcpy(m.weights.data() + 12, &v, 4);
    m.tensors.push_back(probeRecord(bytes));
  }
  return m;
}

struct Fixture {
  kiln::artifact::ArtifactContents contents = baseContents();
  TempFile file{kiln::artifact::serializeArtifact(contents)};
  kiln_artifact_t *artifact = nullptr;
  std::vector<kiln_session_t *> sessions;
  std::vector<kiln_module_t *> modules;
  std::vector<std::unique_ptr<TempFile>> files;

  explicit Fixture(uint32_t weightsMemory = KILN_WEIGHTS_MAPPED) {
    kiln_error_t err;
    kiln_artifact_options_t o = kiln_artifact_options_default();
    o.weights_memory = weightsMemory;
    EXPECT_EQ(kiln_artifact_open_with(file.path().c_str(), &o, &artifact, &err),
              KILN_STATUS_OK)
        << err.message;
  }
  ~Fixture() {
    for (kiln_session_t *s : sessions)
      kiln_session_destroy(s);
    for (kiln_module_t *m : modules)
      kiln_module_close(m);
    kiln_artifact_close(artifact);
  }
  kiln_session_t *session() {
    kiln_session_t *s = nullptr;
    kiln_error_t err;
    kiln_session_options_t o = kiln_session_options_default();
    o.n_threads = 1;
    EXPECT_EQ(kiln_session_create(artifact, &o, &s, &err), KILN_STATUS_OK) << err.message;
    sessions.push_back(s);
    return s;
  }
  kiln_status_t open(const kiln::artifact::ArtifactContents &m, kiln_module_t **out,
                     std::string *message = nullptr) {
    files.push_back(std::make_unique<TempFile>(kiln::artifact::serializeArtifact(m)));
    kiln_error_t err;
    kiln_status_t st = kiln_module_open(files.back()->path().c_str(), nullptr, nullptr, out,
                                        &err);
    if (st == KILN_STATUS_OK)
      modules.push_back(*out);
    if (message)
      *message = err.message;
    return st;
  }
  kiln_module_t *open(const kiln::artifact::ArtifactContents &m) {
    kiln_module_t *mod = nullptr;
    std::string message;
    EXPECT_EQ(open(m, &mod, &message), KILN_STATUS_OK) << message;
    return mod;
  }
};

// Logit 0 after one token (token 5, whose own logit 10 goes to id 6).
float probeOf(kiln_session_t *s) {
  kiln_session_reset(s);
  const int32_t t = 5;
  kiln_error_t err;
  EXPECT_EQ(kiln_session_prefill(s, &t, 1, &err), KILN_STATUS_OK) << err.message;
  return kiln_session_logits(s)[0];
}

kiln_status_t apply(kiln_session_t *s, std::vector<kiln_module_t *> mods,
                    std::string *message = nullptr) {
  kiln_error_t err;
  kiln_status_t st = kiln_session_apply_modules(
      s, const_cast<const kiln_module_t *const *>(mods.data()), uint32_t(mods.size()), &err);
  if (message)
    *message = err.message;
  return st;
}

TEST(RuntimeModule, ApplySwapAndRemoveOnOneSessionOnly) {
  Fixture f;
  kiln_session_t *a = f.session(), *b = f.session();
  kiln_module_t *seven = f.open(moduleContents(f.contents, 7, "seven"));
  kiln_module_t *nine = f.open(moduleContents(f.contents, 9, "nine"));
  kiln_module_info_t info;
  kiln_module_info(seven, &info);
  EXPECT_STREQ(info.kind, "adapter");
  EXPECT_STREQ(info.name, "seven");
  EXPECT_EQ(info.num_tensors, 1u);
  EXPECT_EQ(info.tensor_bytes, 64u);
  EXPECT_EQ(probeOf(a), 0.0f);
  ASSERT_EQ(apply(a, {seven}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(a), 7.0f);
  EXPECT_EQ(probeOf(b), 0.0f) << "another session of the artifact sees the base";
  ASSERT_EQ(apply(a, {nine}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(a), 9.0f);
  ASSERT_EQ(apply(b, {seven}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(b), 7.0f);
  EXPECT_EQ(probeOf(a), 9.0f);
  ASSERT_EQ(apply(a, {}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(a), 0.0f);
  ASSERT_EQ(apply(a, {seven}), KILN_STATUS_OK); // a second view after the first was dropped
  EXPECT_EQ(probeOf(a), 7.0f);
  // The artifact's own bytes never changed.
  kiln_artifact_info_t ai;
  kiln_artifact_info(f.artifact, &ai);
  uint32_t probe;
  std::memcpy(&probe, ai.weights_data + 12, 4);
  EXPECT_EQ(probe, 0u);
}

// A tensor of whole pages goes back to the base by dropping the view's copies of them.
TEST(RuntimeModule, SwapsATensorOfWholePages) {
  Fixture f;
  kiln_session_t *s = f.session();
  kiln_module_t *seven = f.open(moduleContents(f.contents, 7, "seven", {}, 8192));
  kiln_module_t *nine = f.open(moduleContents(f.contents, 9, "nine", {}, 8192));
  ASSERT_EQ(apply(s, {seven}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(s), 7.0f);
  ASSERT_EQ(apply(s, {nine}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(s), 9.0f);
  kiln_module_t *small = f.open(moduleContents(f.contents, 5, "small"));
  ASSERT_EQ(apply(s, {small}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(s), 5.0f);
  ASSERT_EQ(apply(s, {seven}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(s), 7.0f);
}

TEST(RuntimeModule, AppliesOnWeightsReadIntoHugePages) {
  Fixture f(KILN_WEIGHTS_HUGE_PAGES);
  kiln_session_t *s = f.session();
  ASSERT_EQ(apply(s, {f.open(moduleContents(f.contents, 3, "three"))}), KILN_STATUS_OK);
  EXPECT_EQ(probeOf(s), 3.0f);
}

TEST(RuntimeModule, FilterBansTokensAndSamplingAvoidsThem) {
  Fixture f;
  kiln_session_t *s = f.session();
  kiln_module_t *ban = f.open(moduleContents(f.contents, -1, "no-six", {6, 7}));
  ASSERT_EQ(apply(s, {ban}), KILN_STATUS_OK);
  const int32_t t = 5;
  kiln_error_t err;
  ASSERT_EQ(kiln_session_prefill(s, &t, 1, &err), KILN_STATUS_OK);
  const float *row = kiln_session_logits(s);
  EXPECT_TRUE(std::isinf(row[6]) && row[6] < 0);
  EXPECT_TRUE(std::isinf(row[7]) && row[7] < 0);
  int32_t next = -1;
  ASSERT_EQ(kiln_session_sample(s, &next, &err), KILN_STATUS_OK);
  EXPECT_NE(next, 6);
  ASSERT_EQ(apply(s, {}), KILN_STATUS_OK);
  ASSERT_EQ(kiln_session_decode(s, 5, &err), KILN_STATUS_OK);
  EXPECT_EQ(kiln_session_logits(s)[6], 10.0f) << "removing the filter lifts the ban";
}

TEST(RuntimeModule, RefusesAModuleOfAnotherBase) {
  Fixture f;
  kiln_session_t *s = f.session();
  kiln::artifact::ArtifactContents other = baseContents();
  other.weights[100] ^= 1;
  kiln_module_t *m = f.open(moduleContents(other, 7, "elsewhere"));
  std::string message;
  EXPECT_EQ(apply(s, {m}, &message), KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(message.find("compiled for a base whose weights have xxh64"), std::string::npos)
      << message;
  kiln_error_t err;
  EXPECT_EQ(kiln_module_check(m, f.artifact, &err), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(probeOf(s), 0.0f);
}

TEST(RuntimeModule, RefusesATensorOfAnotherLayoutOrName) {
  Fixture f;
  kiln_session_t *s = f.session();
  kiln::artifact::ArtifactContents wrongSize = moduleContents(f.contents, 7, "size");
  wrongSize.tensors[0].size = 32;
  wrongSize.tensors[0].rowStride = 32;
  std::string message;
  EXPECT_EQ(apply(s, {f.open(wrongSize)}, &message), KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(message.find("tensor 'fake.probe' is format 0, 32 bytes"), std::string::npos)
      << message;
  kiln::artifact::ArtifactContents wrongName = moduleContents(f.contents, 7, "name");
  wrongName.tensors[0].name = "blk.9.attn_q.weight";
  EXPECT_EQ(apply(s, {f.open(wrongName)}, &message), KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(message.find("'blk.9.attn_q.weight', which the base does not have"),
            std::string::npos)
      << message;
  kiln_module_t *bans = f.open(moduleContents(f.contents, -1, "far", {100000}));
  EXPECT_EQ(apply(s, {bans}, &message), KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(message.find("outside the vocabulary"), std::string::npos) << message;
}

TEST(RuntimeModule, ConflictingSetLeavesTheSessionAsItWas) {
  Fixture f;
  kiln_session_t *s = f.session();
  kiln_module_t *seven = f.open(moduleContents(f.contents, 7, "seven"));
  kiln_module_t *nine = f.open(moduleContents(f.contents, 9, "nine"));
  ASSERT_EQ(apply(s, {seven}), KILN_STATUS_OK);
  std::string message;
  EXPECT_EQ(apply(s, {nine, seven}, &message), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("both replace tensor 'fake.probe'"), std::string::npos) << message;
  EXPECT_EQ(probeOf(s), 7.0f);
  EXPECT_EQ(apply(s, {seven, nullptr}, &message), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(probeOf(s), 7.0f);
}

TEST(RuntimeModule, ModelAndModuleFilesAreNotMistakenForEachOther) {
  Fixture f;
  kiln_module_t *m = nullptr;
  kiln_error_t err;
  EXPECT_EQ(kiln_module_open(f.file.path().c_str(), nullptr, nullptr, &m, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("a model artifact, not a module"),
            std::string::npos)
      << err.message;
  const std::vector<uint8_t> bytes =
      kiln::artifact::serializeArtifact(moduleContents(f.contents, 7, "seven"));
  kiln::test::OpenResult r = kiln::test::openBytes(bytes);
  EXPECT_EQ(r.status, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("is a kiln module, not a model"), std::string::npos) << r.message;
}

TEST(RuntimeModule, CorruptModulesAreRefusedWithOneError) {
  Fixture f;
  std::vector<uint8_t> good =
      kiln::artifact::serializeArtifact(moduleContents(f.contents, 7, "seven"));
  struct Case {
    std::vector<uint8_t> bytes;
    kiln_status_t want;
    const char *text;
  };
  std::vector<Case> cases;
  cases.push_back({std::vector<uint8_t>(good.begin(), good.end() - 10), KILN_STATUS_CORRUPT,
                   "truncated"});
  std::vector<uint8_t> flipped = good;
  flipped.back() ^= 0x40; // inside the weights section (the module's tensor)
  cases.push_back({flipped, KILN_STATUS_CORRUPT, "checksum mismatch"});
  kiln::artifact::ArtifactContents kind = moduleContents(f.contents, 7, "kind");
  kind.module->kind = "plugin";
  cases.push_back({kiln::artifact::serializeArtifact(kind), KILN_STATUS_UNSUPPORTED,
                   "module kind 'plugin'"});
  kiln::artifact::ArtifactContents negative = moduleContents(f.contents, -1, "neg", {-3});
  cases.push_back({kiln::artifact::serializeArtifact(negative), KILN_STATUS_CORRUPT,
                   "bans token id -3"});
  for (const Case &c : cases) {
    TempFile t(c.bytes);
    kiln_module_t *m = nullptr;
    kiln_error_t err;
    EXPECT_EQ(kiln_module_open(t.path().c_str(), nullptr, nullptr, &m, &err), c.want)
        << err.message;
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(std::string(err.message).find(c.text), std::string::npos) << err.message;
  }
}

} // namespace
