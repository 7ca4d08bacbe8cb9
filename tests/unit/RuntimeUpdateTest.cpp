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
std::vector<uint8_t> version(uint8_t v, size_t extra = 0) {
  auto c = fakeContents();
  c.weights.resize(c.weights.size() + extra, 0);
  c.weights.back() = v;
  c.weights[c.weights.size() / 2] = uint8_t(v * 7 + 1);
  return kiln::artifact::serializeArtifact(c);
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
