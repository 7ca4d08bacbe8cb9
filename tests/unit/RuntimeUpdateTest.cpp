// kiln/update.h: an artifact set under a manifest, installed atomically, rolled back; and
// kill -9 at 100 random points of installs: every time, the next load finds the old set or
// the new one, complete.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>

extern "C" {
#include "kiln/artifact.h"
#include "kiln/update.h"
}
#include "tests/unit/RuntimeFakeArtifact.h"

namespace fs = std::filesystem;
using namespace kiln::test;

namespace {

// Version v of a fake artifact, with `extra` bytes of weights so a copy takes a while.
kiln::artifact::ArtifactContents versionContents(uint8_t v, size_t extra = 0) {
  auto c = fakeContents();
  c.weights.resize(c.weights.size() + extra, 0);
  c.weights.back() = v;
  c.weights[c.weights.size() / 2] = uint8_t(v * 7 + 1);
  return c;
}

std::vector<uint8_t> version(uint8_t v, size_t extra = 0) {
  return kiln::artifact::serializeArtifact(versionContents(v, extra));
}

// A module of `base` (kiln/module.h) replacing its token embedding.
std::vector<uint8_t> moduleOf(const kiln::artifact::ArtifactContents &base, const char *name) {
  kiln::artifact::ArtifactContents m;
  m.target = base.target;
  m.config = base.config;
  m.module = kiln::artifact::ModuleRecord{"adapter", name, "",
                                          kiln_xxh64(base.weights.data(), base.weights.size()),
                                          base.weights.size(), {}};
  const kiln::artifact::TensorRecord &t = base.tensors[0];
  m.weights.assign(base.weights.begin() + int64_t(t.offset),
                   base.weights.begin() + int64_t(t.offset + t.size));
  m.weights[0] ^= 0x5a;
  m.tensors.push_back(t);
  m.tensors[0].offset = 0;
  return kiln::artifact::serializeArtifact(m);
}

uint64_t headerHash(const std::vector<uint8_t> &bytes) {
  kiln_artifact_preamble_t p;
  std::memcpy(&p, bytes.data(), sizeof p);
  return p.header_xxh64;
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/kiln-set-XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string &name, const std::vector<uint8_t> &bytes) const {
    std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()),
                                              std::streamsize(bytes.size()));
    return p;
  }
};

// The base of the set in `dir`: loads, opens and verifies, returns its header checksum.
uint64_t currentBase(const std::string &dir) {
  kiln_manifest_t m;
  kiln_error_t err;
  EXPECT_EQ(kiln_manifest_load(dir.c_str(), &m, &err), KILN_STATUS_OK) << err.message;
  char path[1024];
  EXPECT_EQ(kiln_manifest_path(dir.c_str(), &m, "base", path, sizeof path, &err),
            KILN_STATUS_OK)
      << err.message;
  kiln_artifact_t *a = nullptr;
  EXPECT_EQ(kiln_artifact_open(path, nullptr, &a, &err), KILN_STATUS_OK) << err.message;
  kiln_artifact_close(a);
  for (uint32_t i = 0; i < m.n_entries; ++i)
    if (!std::strcmp(m.entries[i].role, "base"))
      return m.entries[i].header_xxh64;
  return 0;
}

TEST(RuntimeUpdate, InstallRollbackAndCollect) {
  TempDir set, staging;
  const auto a = version(1), b = version(2), c = version(3);
  kiln_error_t err;
  kiln_manifest_t m;
  EXPECT_EQ(kiln_manifest_load(set.path.c_str(), &m, &err), KILN_STATUS_IO_ERROR);
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "base", staging.file("a.kiln", a).c_str(),
                                  nullptr, &err),
            KILN_STATUS_OK)
      << err.message;
  EXPECT_EQ(currentBase(set.path), headerHash(a));
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "head", staging.file("h.kiln", c).c_str(),
                                  nullptr, &err),
            KILN_STATUS_OK);
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "base", staging.file("b.kiln", b).c_str(),
                                  nullptr, &err),
            KILN_STATUS_OK);
  ASSERT_EQ(kiln_manifest_load(set.path.c_str(), &m, &err), KILN_STATUS_OK);
  EXPECT_EQ(m.generation, 3u);
  EXPECT_EQ(m.n_entries, 2u);
  EXPECT_EQ(currentBase(set.path), headerHash(b));
  ASSERT_EQ(kiln_manifest_rollback(set.path.c_str(), &err), KILN_STATUS_OK) << err.message;
  EXPECT_EQ(currentBase(set.path), headerHash(a));
  ASSERT_EQ(kiln_manifest_rollback(set.path.c_str(), &err), KILN_STATUS_OK);
  EXPECT_EQ(currentBase(set.path), headerHash(b)) << "rolling back twice is a redo";
  // Installing C as base: A is named by neither set any more and goes.
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "base", staging.file("c.kiln", c).c_str(),
                                  nullptr, &err),
            KILN_STATUS_OK);
  std::set<std::string> files;
  for (const auto &e : fs::directory_iterator(set.path))
    files.insert(e.path().filename().string());
  char aName[64];
  std::snprintf(aName, sizeof aName, "base-%016llx.kiln",
                static_cast<unsigned long long>(headerHash(a)));
  EXPECT_FALSE(files.count(aName)) << "A is unreferenced";
  EXPECT_EQ(files.count("kiln-manifest.prev"), 1u);
  // A corrupt or truncated download changes nothing.
  auto torn = b;
  torn.resize(torn.size() - 100);
  EXPECT_EQ(kiln_manifest_install(set.path.c_str(), "base",
                                  staging.file("torn.kiln", torn).c_str(), nullptr, &err),
            KILN_STATUS_CORRUPT);
  EXPECT_EQ(currentBase(set.path), headerHash(c));
  EXPECT_EQ(kiln_manifest_install(set.path.c_str(), "bad role!", staging.file("x", b).c_str(),
                                  nullptr, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  // A member changed behind the manifest's back is found at load.
  kiln_manifest_t cur;
  ASSERT_EQ(kiln_manifest_load(set.path.c_str(), &cur, &err), KILN_STATUS_OK);
  fs::resize_file(set.path + "/" + cur.entries[0].file, 100);
  EXPECT_EQ(kiln_manifest_load(set.path.c_str(), &cur, &err), KILN_STATUS_CORRUPT);
  EXPECT_NE(std::string(err.message).find("the manifest says"), std::string::npos)
      << err.message;
}

// Modules join a set only if they fit its base; a set whose base moved on without them
// does not open, and a rollback makes it whole again.
TEST(RuntimeUpdate, ModulesInstallAgainstTheBaseAndOpenAsASet) {
  TempDir set, staging;
  const auto a = versionContents(1), b = versionContents(2);
  const std::string dir = set.path;
  kiln_error_t err;
  ASSERT_EQ(kiln_manifest_install(dir.c_str(), "base",
                                  staging.file("a.kiln", kiln::artifact::serializeArtifact(a))
                                      .c_str(),
                                  nullptr, &err),
            KILN_STATUS_OK)
      << err.message;
  ASSERT_EQ(kiln_manifest_install(dir.c_str(), "adapter:tone",
                                  staging.file("tone.kiln", moduleOf(a, "tone")).c_str(),
                                  nullptr, &err),
            KILN_STATUS_OK)
      << err.message;
  EXPECT_EQ(kiln_manifest_install(dir.c_str(), "adapter:other",
                                  staging.file("other.kiln", moduleOf(b, "other")).c_str(),
                                  nullptr, &err),
            KILN_STATUS_UNSUPPORTED)
      << "a module of another base is refused at install";
  EXPECT_NE(std::string(err.message).find("compiled for a base"), std::string::npos)
      << err.message;
  EXPECT_EQ(kiln_manifest_install(dir.c_str(), "base",
                                  staging.file("m.kiln", moduleOf(a, "m")).c_str(), nullptr,
                                  &err),
            KILN_STATUS_INVALID_ARGUMENT);

  kiln_artifact_t *base = nullptr;
  kiln_module_t *mods[4] = {};
  uint32_t n = 0;
  ASSERT_EQ(kiln_manifest_open(dir.c_str(), nullptr, &base, mods, 4, &n, &err), KILN_STATUS_OK)
      << err.message;
  ASSERT_EQ(n, 1u);
  kiln_module_info_t info;
  kiln_module_info(mods[0], &info);
  EXPECT_STREQ(info.name, "tone");
  kiln_session_t *s = nullptr;
  ASSERT_EQ(kiln_session_create(base, nullptr, &s, &err), KILN_STATUS_OK);
  EXPECT_EQ(kiln_session_apply_modules(s, mods, n, &err), KILN_STATUS_OK) << err.message;
  kiln_session_destroy(s);
  kiln_module_close(mods[0]);
  kiln_artifact_close(base);

  // The base alone moves on: the set no longer opens, naming the stale member.
  ASSERT_EQ(kiln_manifest_install(dir.c_str(), "base",
                                  staging.file("b.kiln", kiln::artifact::serializeArtifact(b))
                                      .c_str(),
                                  nullptr, &err),
            KILN_STATUS_OK);
  EXPECT_EQ(kiln_manifest_open(dir.c_str(), nullptr, &base, mods, 4, &n, &err),
            KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(base, nullptr);
  EXPECT_NE(std::string(err.message).find("member 'adapter:tone'"), std::string::npos)
      << err.message;
  ASSERT_EQ(kiln_manifest_rollback(dir.c_str(), &err), KILN_STATUS_OK);
  ASSERT_EQ(kiln_manifest_open(dir.c_str(), nullptr, &base, mods, 4, &n, &err), KILN_STATUS_OK)
      << err.message;
  EXPECT_EQ(n, 1u);
  kiln_module_close(mods[0]);
  kiln_artifact_close(base);
  EXPECT_EQ(kiln_manifest_open(dir.c_str(), nullptr, &base, mods, 0, &n, &err),
            KILN_STATUS_BUFFER_TOO_SMALL);
}

// kill -9 at a random moment of an install, 100 times: the next load always finds a whole
// set, the old one or the new one.
TEST(RuntimeUpdate, KillNineAtRandomPointsLeavesAConsistentSet) {
  TempDir set, staging;
  const size_t extra = 8 << 20; // 8 MiB of weights: the copy spans many kill points
  const auto a = version(1, extra), b = version(2, extra);
  const std::string pa = staging.file("a.kiln", a), pb = staging.file("b.kiln", b);
  kiln_error_t err;
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "base", pa.c_str(), nullptr, &err),
            KILN_STATUS_OK)
      << err.message;
  // How long one install takes here (after a warm-up pair), to spread the kills over it.
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "base", pb.c_str(), nullptr, &err),
            KILN_STATUS_OK);
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "base", pa.c_str(), nullptr, &err),
            KILN_STATUS_OK);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kiln_manifest_install(set.path.c_str(), "base", pb.c_str(), nullptr, &err),
            KILN_STATUS_OK);
  const double installUs =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  std::mt19937 rng(1234);
  // A forked child's install runs slower than the warm one timed here (new process,
  // first-touch costs): kills spread over 1.5 times the warm install.
  std::uniform_real_distribution<double> when(0, installUs * 1.5);
  int killed = 0, finished = 0, killedOld = 0, killedNew = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t before = currentBase(set.path);
    const std::string &next = before == headerHash(a) ? pb : pa;
    const uint64_t after = before == headerHash(a) ? headerHash(b) : headerHash(a);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      kiln_error_t e;
      _exit(kiln_manifest_install(set.path.c_str(), "base", next.c_str(), nullptr, &e) ==
                    KILN_STATUS_OK
                ? 0
                : 3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(when(rng))));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      ++killed;
    } else {
      ASSERT_EQ(WEXITSTATUS(status), 0);
      ++finished;
    }
    const uint64_t now = currentBase(set.path);
    ASSERT_TRUE(now == before || now == after) << "iteration " << i;
    if (WIFSIGNALED(status))
      ++(now == before ? killedOld : killedNew);
    if (WIFEXITED(status)) {
      EXPECT_EQ(now, after) << "a finished install is the current set";
    }
  }
  EXPECT_GT(killed, 20) << "kills must land inside installs (" << installUs << " us)";
  std::printf("kill -9: %d installs killed (%d left the old set, %d the new), %d finished; "
              "one warm install %.0f us\n",
              killed, killedOld, killedNew, finished, installUs);
}

} // namespace
