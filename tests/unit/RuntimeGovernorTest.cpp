// runtime-min's governor (kiln/governor.h) on a fake sysfs tree and a fake clock: a
// temperature ramp changes the pace within one period; garbage, missing, out-of-range and
// frozen files are reported and ignored; every decision is logged; fewer threads when
// they hold the speed. Then the pool's active-thread switch and a paced session on the
// fake artifact.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <sched.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "kiln/governor.h"
#include "runtime-min/src/exec/pool.h"
}
#include "tests/unit/RuntimeFakeArtifact.h"

namespace fs = std::filesystem;
using namespace kiln::test;

namespace {

// A fake /sys with thermal zones, removed at the end.
class FakeSysfs {
public:
  FakeSysfs() {
    char tmpl[] = "/tmp/kiln-sysfs-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  const std::string &root() const { return root_; }
  std::string zone(int n, const std::string &type) {
    fs::path d = fs::path(root_) / "class/thermal" / ("thermal_zone" + std::to_string(n));
    fs::create_directories(d);
    write((d / "type").string(), type + "\n");
    return (d / "temp").string();
  }
  static void write(const std::string &path, const std::string &text) {
    std::ofstream(path, std::ios::trunc) << text;
  }

private:
  std::string root_;
};

// The governor driven by hand: a fake clock, decisions collected.
struct Harness {
  double now = 0;
  std::vector<kiln_governor_decision_t> log;
  kiln_governor_t *g = nullptr;

  static double clock(void *u) { return static_cast<Harness *>(u)->now; }
  static void logIt(void *u, const kiln_governor_decision_t *d) {
    static_cast<Harness *>(u)->log.push_back(*d);
  }
  kiln_governor_config_t config() {
    kiln_governor_config_t c = kiln_governor_config_default();
    c.clock_s = clock;
    c.hook_user = this;
    c.log = logIt;
    c.log_user = this;
    return c;
  }
  void create(const kiln_governor_config_t &c) {
    kiln_error_t err;
    ASSERT_EQ(kiln_governor_create(&c, nullptr, &g, &err), KILN_STATUS_OK) << err.message;
  }
  ~Harness() { kiln_governor_destroy(g); }
  // Tokens of compute time c (on `threads`) until the clock passes `until`; each token
  // also waits out the idle time the governor asks for. Returns the last action.
  kiln_governor_action_t run(double until, const std::function<double(uint32_t)> &c,
                             uint32_t threads, const std::function<void(double)> &at = {}) {
    kiln_governor_action_t a{0, threads, 0};
    while (now < until) {
      if (at)
        at(now);
      const double dt = c(a.threads);
      now += dt;
      kiln_governor_on_token(g, dt, a.threads, &a);
      now += a.idle_s;
    }
    return a;
  }
};

const kiln_governor_decision_t *firstAfter(const std::vector<kiln_governor_decision_t> &log,
                                           double t) {
  for (const auto &d : log)
    if (d.t_s >= t)
      return &d;
  return nullptr;
}

TEST(RuntimeGovernor, TemperatureRampChangesThePaceWithinOnePeriod) {
  FakeSysfs sys;
  const std::string cpu = sys.zone(0, "cpu-1-0-usr");
  const std::string battery = sys.zone(1, "battery"); // not a CPU/SoC/skin zone: ignored
  FakeSysfs::write(battery, "90000\n");
  Harness h;
  kiln_governor_config_t c = h.config();
  c.sysfs_root = sys.root().c_str();
  c.max_temp_c = 45;
  c.max_threads = 1;
  h.create(c);
  // 40.0 C, rising 1 C per second from t = 5 s: over 45 C from t = 10 s on.
  auto temp = [&](double t) {
    const int milli = t < 5 ? 40000 + int(t * 10) : 40000 + int((t - 5) * 1000);
    FakeSysfs::write(cpu, std::to_string(milli) + "\n");
  };
  h.run(20, [](uint32_t) { return 0.02; }, 1, temp);
  ASSERT_GE(h.log.size(), 18u);
  for (const auto &d : h.log) {
    EXPECT_STREQ(d.temp_state, "ok");
    EXPECT_LT(d.temp_c, 60) << "the battery zone at 90 C must not be read";
  }
  const kiln_governor_decision_t *before = firstAfter(h.log, 8.0);
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(before->pace_tok_s, 0) << "under the ceiling decode is not paced";
  // Crossed at t = 10 s; the first decision at or after 10.0 + one period must pace.
  const kiln_governor_decision_t *after = firstAfter(h.log, 10.0 + c.period_s + 0.05);
  ASSERT_NE(after, nullptr);
  EXPECT_GT(after->pace_tok_s, 0);
  EXPECT_LE(after->pace_tok_s, 0.85 * 50 + 1e-9);
  bool sawOver = false;
  for (const auto &d : h.log)
    if (d.t_s > 10 && d.t_s <= 10.0 + c.period_s + 0.05)
      sawOver |= std::strcmp(d.reason, "temperature over the ceiling") == 0;
  EXPECT_TRUE(sawOver);
  // Still over: the pace keeps falling, and tokens come at that pace.
  const auto &last = h.log.back();
  EXPECT_LT(last.pace_tok_s, after->pace_tok_s);
  EXPECT_NEAR(last.idle_s, 1.0 / last.pace_tok_s - 0.02, 1e-9);
  // Decisions are timestamped in order, about one period apart.
  for (size_t i = 1; i < h.log.size(); ++i) {
    EXPECT_GT(h.log[i].t_s, h.log[i - 1].t_s);
    EXPECT_LT(h.log[i].t_s - h.log[i - 1].t_s, 1.5);
  }
}

TEST(RuntimeGovernor, CoolingReleasesThePace) {
  Harness h;
  kiln_governor_config_t c = h.config();
  // hook_user is the harness (the clock's); the temperature comes from a static.
  static double s_temp;
  s_temp = 50;
  c.read_temp_c = [](void *, double *out) {
    *out = s_temp;
    return 0;
  };
  c.stale_s = 1000;
  c.max_temp_c = 45;
  c.max_threads = 1;
  h.create(c);
  h.run(5, [](uint32_t) { return 0.02; }, 1);
  ASSERT_GT(h.log.back().pace_tok_s, 0);
  s_temp = 30;
  h.run(200, [](uint32_t) { return 0.02; }, 1);
  EXPECT_EQ(h.log.back().pace_tok_s, 0) << h.log.back().reason;
  bool released = false;
  for (const auto &d : h.log)
    released |= std::strcmp(d.reason, "below every ceiling: unpaced") == 0;
  EXPECT_TRUE(released);
}

// skip_fastest: while a ceiling caps the pace the threads leave the fastest cores, and come
// back when it is released; without it they never move.
TEST(RuntimeGovernor, CappedPaceLeavesTheFastestCores) {
  for (uint32_t skip : {0u, 1u}) {
    SCOPED_TRACE("skip_fastest " + std::to_string(skip));
    Harness h;
    kiln_governor_config_t c = h.config();
    static double s_temp;
    s_temp = 50;
    c.read_temp_c = [](void *, double *out) {
      *out = s_temp;
      return 0;
    };
    c.stale_s = 1000;
    c.max_temp_c = 45;
    c.max_threads = 2;
    c.skip_fastest = skip;
    h.create(c);
    kiln_governor_action_t a = h.run(5, [](uint32_t) { return 0.02; }, 2);
    ASSERT_GT(h.log.back().pace_tok_s, 0);
    EXPECT_EQ(a.skip_cores, skip);
    EXPECT_EQ(h.log.back().skip_cores, skip);
    char line[512];
    kiln_governor_format_decision(&h.log.back(), line, sizeof line);
    EXPECT_EQ(std::strstr(line, " skip=1:") != nullptr, skip == 1) << line;
    s_temp = 30;
    a = h.run(200, [](uint32_t) { return 0.02; }, 2);
    EXPECT_EQ(h.log.back().pace_tok_s, 0);
    EXPECT_EQ(a.skip_cores, 0u);
    int moves = 0;
    for (size_t i = 1; i < h.log.size(); ++i)
      moves += h.log[i].skip_cores != h.log[i - 1].skip_cores;
    EXPECT_EQ(moves, skip == 1 ? 1 : 0) << "off once while capped (from the first decision), "
                                           "back once released";
  }
}

TEST(RuntimeGovernor, GarbageMissingOutOfRangeAndFrozenFilesAreNotTrusted) {
  FakeSysfs sys;
  const std::string cpu = sys.zone(0, "soc-thermal");
  fs::create_directories(fs::path(sys.root()) / "class/power_supply/battery");
  const std::string power = sys.root() + "/class/power_supply/battery/current_now";
  const std::string volts = sys.root() + "/class/power_supply/battery/voltage_now";
  Harness h;
  kiln_governor_config_t c = h.config();
  c.sysfs_root = sys.root().c_str();
  c.power_path = power.c_str();
  c.max_temp_c = 45;
  c.max_power_w = 5;
  c.stale_s = 3;
  c.max_threads = 1;
  h.create(c);
  auto steady = [](uint32_t) { return 0.02; };
  struct Case {
    const char *temp, *state;
  } cases[] = {{"abc\n", "garbage"}, {"", "garbage"},         {"99999999\n", "out of range"},
               {"45000 junk\n", "garbage"}, {"-", "garbage"}, {"0x30\n", "garbage"}};
  int amps = 0;
  for (const Case &k : cases) {
    FakeSysfs::write(cpu, k.temp);
    FakeSysfs::write(power, "-" + std::to_string(1000000 + ++amps) + "\n"); // ~1 A out
    FakeSysfs::write(volts, "3900000\n");                                  // 3.9 V
    const size_t from = h.log.size();
    h.run(h.now + 2, steady, 1);
    ASSERT_GT(h.log.size(), from);
    const auto &d = h.log.back();
    EXPECT_STREQ(d.temp_state, k.state) << "temp file: '" << k.temp << "'";
    EXPECT_TRUE(std::isnan(d.temp_c));
    EXPECT_STREQ(d.power_state, "ok");
    EXPECT_NEAR(d.power_w, 3.9, 1e-3);
    EXPECT_EQ(d.pace_tok_s, 0) << "an untrusted reading must not pace decode";
  }
  fs::remove(cpu);
  fs::remove(volts);
  h.run(h.now + 2, steady, 1);
  EXPECT_STREQ(h.log.back().temp_state, "missing");
  EXPECT_STREQ(h.log.back().power_state, "missing");
  // A hot reading that never changes: trusted for stale_s, then frozen and ignored.
  FakeSysfs::write(cpu, "80000\n");
  FakeSysfs::write(volts, "3900000\n");
  h.run(h.now + 1.5, steady, 1);
  EXPECT_STREQ(h.log.back().temp_state, "ok");
  EXPECT_GT(h.log.back().pace_tok_s, 0);
  h.run(h.now + 10, steady, 1);
  EXPECT_STREQ(h.log.back().temp_state, "frozen");
  EXPECT_STREQ(h.log.back().power_state, "frozen");
  EXPECT_TRUE(std::isnan(h.log.back().temp_c));
  // The pace the hot reading caused is released once nothing trusted is over.
  h.run(h.now + 200, steady, 1);
  EXPECT_EQ(h.log.back().pace_tok_s, 0);
}

TEST(RuntimeGovernor, NoSensorsAtAllStillPacesOnTheTarget) {
  FakeSysfs sys; // no zones
  Harness h;
  kiln_governor_config_t c = h.config();
  c.sysfs_root = sys.root().c_str();
  c.target_tok_s = 10;
  c.max_temp_c = 45;
  c.max_threads = 1;
  h.create(c);
  kiln_governor_action_t a = h.run(5, [](uint32_t) { return 0.02; }, 1);
  EXPECT_NEAR(a.idle_s, 0.08, 1e-9);
  EXPECT_STREQ(h.log.back().temp_state, "missing");
  EXPECT_EQ(h.log.back().pace_tok_s, 10);
  EXPECT_STREQ(h.log.back().reason, "holding the target pace");
  // Tokens delivered at the target pace over the logged periods.
  size_t tokens = 0;
  for (const auto &d : h.log)
    tokens += d.tokens;
  EXPECT_NEAR(double(tokens) / h.log.back().t_s, 10, 0.3);
}

TEST(RuntimeGovernor, FewestThreadsThatHoldTheSpeed) {
  Harness h;
  kiln_governor_config_t c = h.config();
  c.thermal_paths = "";
  c.max_threads = 8;
  h.create(c);
  // Bandwidth-bound past 3 threads: 60 ms of compute split over n, never under 20 ms.
  auto cost = [](uint32_t n) { return std::max(0.02, 0.06 / n); };
  kiln_governor_action_t a = h.run(20, cost, 8);
  EXPECT_EQ(a.threads, 3u);
  bool probedTwo = false;
  for (const auto &d : h.log)
    probedTwo |= d.threads == 2;
  EXPECT_TRUE(probedTwo) << "the governor looks one thread below before it settles";
  // Paced at 10 tokens/s, fewer threads are enough: 2 threads give 33 tokens/s.
  Harness p;
  kiln_governor_config_t pc = p.config();
  pc.thermal_paths = "";
  pc.max_threads = 8;
  pc.target_tok_s = 10;
  p.create(pc);
  a = p.run(30, cost, 8);
  EXPECT_EQ(a.threads, 1u) << "1 thread gives 16.7 tokens/s, above 10 x 1.1";
  EXPECT_NEAR(a.idle_s, 0.1 - 0.06, 1e-9);
}

TEST(RuntimeGovernor, SlowerTokensCountAsACeiling) {
  Harness h;
  kiln_governor_config_t c = h.config();
  c.thermal_paths = "";
  c.max_slowdown = 1.3;
  c.max_threads = 1;
  h.create(c);
  h.run(5, [](uint32_t) { return 0.02; }, 1);
  EXPECT_EQ(h.log.back().pace_tok_s, 0);
  h.run(8, [](uint32_t) { return 0.03; }, 1); // the OS cut the clocks by a third
  EXPECT_GT(h.log.back().pace_tok_s, 0);
  EXPECT_LT(h.log.back().pace_tok_s, 1 / 0.03);
}

TEST(RuntimeGovernor, BadConfigIsAnError) {
  kiln_governor_t *g = nullptr;
  kiln_error_t err;
  kiln_governor_config_t c = kiln_governor_config_default();
  c.target_tok_s = NAN;
  EXPECT_EQ(kiln_governor_create(&c, nullptr, &g, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("target_tok_s"), std::string::npos) << err.message;
  EXPECT_EQ(g, nullptr);
  c = kiln_governor_config_default();
  c.max_temp_c = -5;
  EXPECT_EQ(kiln_governor_create(&c, nullptr, &g, &err), KILN_STATUS_INVALID_ARGUMENT);
  c = kiln_governor_config_default();
  c.min_threads = 4;
  c.max_threads = 2;
  EXPECT_EQ(kiln_governor_create(&c, nullptr, &g, &err), KILN_STATUS_INVALID_ARGUMENT);
  c = kiln_governor_config_default();
  c.max_slowdown = 1.0;
  EXPECT_EQ(kiln_governor_create(&c, nullptr, &g, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_governor_create(nullptr, nullptr, nullptr, &err),
            KILN_STATUS_INVALID_ARGUMENT);
}

// Every task of every job runs exactly once, on no more threads than are active, while the
// active count changes between jobs (parked workers come back without missing a job).
TEST(RuntimePool, ActiveThreadsChangeBetweenJobs) {
  kiln_allocator_t alloc{[](void *, size_t n, size_t a) { return aligned_alloc(a, (n + a - 1) / a * a); },
                         [](void *, void *p, size_t) { free(p); }, nullptr};
  kiln_pool_t *pool = nullptr;
  kiln_error_t err;
  ASSERT_EQ(kiln_pool_create(4, &alloc, &pool, &err), KILN_STATUS_OK);
  struct Job {
    std::vector<std::atomic<int>> hits;
    std::mutex mu;
    std::set<std::thread::id> threads;
    explicit Job(size_t n) : hits(n) {}
  };
  const uint32_t pattern[] = {4, 1, 2, 4, 3, 1, 1, 4, 2, 2, 3};
  for (int round = 0; round < 300; ++round) {
    const uint32_t active = pattern[round % (sizeof pattern / sizeof pattern[0])];
    ASSERT_EQ(kiln_pool_set_active(pool, active), active);
    for (int rep = 0; rep < 3; ++rep) {
      Job job(37);
      kiln_pool_parallel_for(
          pool,
          [](void *arg, int32_t i, int32_t) {
            auto *j = static_cast<Job *>(arg);
            j->hits[size_t(i)].fetch_add(1);
            std::lock_guard<std::mutex> l(j->mu);
            j->threads.insert(std::this_thread::get_id());
          },
          &job, 37);
      for (auto &h : job.hits)
        ASSERT_EQ(h.load(), 1);
      ASSERT_LE(job.threads.size(), active);
    }
  }
  EXPECT_EQ(kiln_pool_set_active(pool, 0), 1u);
  EXPECT_EQ(kiln_pool_set_active(pool, 99), 4u);
  kiln_pool_set_active(pool, 2); // destroy with parked workers
  kiln_pool_destroy(pool);
}

// A session paced at a target: decode waits between tokens, the threads follow the
// governor's max_threads, and detaching gives the session back its pool.
TEST(RuntimeGovernor, PacesASession) {
  TempFile file(fakeArtifact());
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  ASSERT_EQ(kiln_artifact_open(file.path().c_str(), nullptr, &a, &err), KILN_STATUS_OK);
  kiln_session_options_t o = kiln_session_options_default();
  o.n_threads = 4;
  kiln_session_t *s = nullptr;
  ASSERT_EQ(kiln_session_create(a, &o, &s, &err), KILN_STATUS_OK) << err.message;
  kiln_governor_config_t c = kiln_governor_config_default();
  c.thermal_paths = "";
  c.target_tok_s = 100;
  c.max_threads = 2;
  c.period_s = 0.05;
  kiln_governor_t *g = nullptr;
  ASSERT_EQ(kiln_governor_create(&c, nullptr, &g, &err), KILN_STATUS_OK) << err.message;
  ASSERT_EQ(kiln_session_set_governor(s, g, &err), KILN_STATUS_OK) << err.message;
  kiln_session_stats_t st;
  kiln_session_stats(s, &st);
  EXPECT_EQ(st.n_threads, 2u);
  int32_t tok = 1;
  ASSERT_EQ(kiln_session_prefill(s, &tok, 1, &err), KILN_STATUS_OK);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 21; ++i)
    ASSERT_EQ(kiln_session_decode(s, tok = (tok + 1) % 32, &err), KILN_STATUS_OK);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 20 / 100.0 * 0.95) << "20 gaps at 100 tokens/s";
  kiln_governor_decision_t d;
  kiln_governor_last(g, &d);
  EXPECT_GT(d.t_s, 0);
  EXPECT_LE(d.threads, 2u);
  // A second session cannot share it.
  kiln_session_t *s2 = nullptr;
  ASSERT_EQ(kiln_session_create(a, &o, &s2, &err), KILN_STATUS_OK);
  EXPECT_EQ(kiln_session_set_governor(s2, g, &err), KILN_STATUS_INVALID_ARGUMENT);
  kiln_session_destroy(s2);
  ASSERT_EQ(kiln_session_set_governor(s, nullptr, &err), KILN_STATUS_OK);
  kiln_session_stats(s, &st);
  EXPECT_EQ(st.n_threads, 4u);
  // Either order of teardown is safe: attached again, the session goes first.
  ASSERT_EQ(kiln_session_set_governor(s, g, &err), KILN_STATUS_OK);
  kiln_session_destroy(s);
  kiln_governor_destroy(g);
  kiln_artifact_close(a);
}

// The fake artifact, opened for each placement test.
class RuntimePlacement : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(kiln_artifact_open(file.path().c_str(), nullptr, &a, &err), KILN_STATUS_OK);
  }
  void TearDown() override { kiln_artifact_close(a); }
  TempFile file{fakeArtifact()};
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
};

// pin_threads: every pool thread on a core of its own, the caller's affinity given back.
TEST_F(RuntimePlacement, PinnedSessionRunsAndRestoresTheCaller) {
  cpu_set_t before, after;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  const uint32_t cores = std::min<uint32_t>(2, uint32_t(CPU_COUNT(&before)));
  kiln_session_options_t o = kiln_session_options_default();
  o.n_threads = 2;
  o.pin_threads = 1;
  kiln_session_t *s = nullptr;
  ASSERT_EQ(kiln_session_create(a, &o, &s, &err), KILN_STATUS_OK) << err.message;
  kiln_session_stats_t st;
  kiln_session_stats(s, &st);
  EXPECT_EQ(st.pinned_threads, cores);
  int32_t tok = 3;
  ASSERT_EQ(kiln_session_prefill(s, &tok, 1, &err), KILN_STATUS_OK);
  for (int i = 0; i < 8; ++i)
    ASSERT_EQ(kiln_session_decode(s, tok = (tok + 1) % 32, &err), KILN_STATUS_OK);
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "the caller's affinity comes back after a call";
  kiln_session_destroy(s);
  o.pin_threads = 0;
  ASSERT_EQ(kiln_session_create(a, &o, &s, &err), KILN_STATUS_OK);
  kiln_session_stats(s, &st);
  EXPECT_EQ(st.pinned_threads, 0u);
  kiln_session_destroy(s);
}

// A pinned session paced by a ceiling with skip_fastest = 1 moves off its fastest core:
// on a 2-core machine one core is left, so one thread; detached, both again.
TEST_F(RuntimePlacement, PacedSessionLeavesTheFastestCore) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  if (CPU_COUNT(&mask) < 2)
    GTEST_SKIP() << "needs two cores";
  kiln_session_options_t o = kiln_session_options_default();
  o.n_threads = 2;
  o.pin_threads = 1;
  kiln_session_t *s = nullptr;
  ASSERT_EQ(kiln_session_create(a, &o, &s, &err), KILN_STATUS_OK) << err.message;
  kiln_governor_config_t c = kiln_governor_config_default();
  c.read_temp_c = [](void *, double *out) {
    *out = 60;
    return 0;
  };
  c.read_power_w = nullptr;
  c.thermal_paths = "";
  c.stale_s = 1000;
  c.max_temp_c = 45;
  c.period_s = 0.005;
  c.min_tok_s = 1000; /* the pace never waits long */
  c.skip_fastest = 1;
  kiln_governor_t *g = nullptr;
  ASSERT_EQ(kiln_governor_create(&c, nullptr, &g, &err), KILN_STATUS_OK) << err.message;
  ASSERT_EQ(kiln_session_set_governor(s, g, &err), KILN_STATUS_OK);
  int32_t tok = 3;
  ASSERT_EQ(kiln_session_prefill(s, &tok, 1, &err), KILN_STATUS_OK);
  kiln_session_stats_t st;
  // Decode until the governor has decided (periods of 5 ms; a fake token takes microseconds),
  // at most 5 s.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(kiln_session_decode(s, tok = (tok + 1) % 32, &err), KILN_STATUS_OK);
    if (kiln_session_n_past(s) + 1 >= kiln::test::kFakeMaxCtx) {
      kiln_session_reset(s);
      ASSERT_EQ(kiln_session_prefill(s, &tok, 1, &err), KILN_STATUS_OK);
    }
    kiln_governor_decision_t d;
    kiln_governor_last(g, &d);
    if (d.skip_cores == 1 && d.pace_tok_s > 0)
      break;
  }
  ASSERT_EQ(kiln_session_decode(s, tok = (tok + 1) % 32, &err), KILN_STATUS_OK);
  kiln_governor_decision_t d;
  kiln_governor_last(g, &d);
  EXPECT_EQ(d.skip_cores, 1u);
  kiln_session_stats(s, &st);
  EXPECT_EQ(st.n_threads, 1u) << "one core is left after the fastest";
  ASSERT_EQ(kiln_session_set_governor(s, nullptr, &err), KILN_STATUS_OK);
  kiln_session_stats(s, &st);
  EXPECT_EQ(st.n_threads, 2u);
  kiln_session_destroy(s);
  kiln_governor_destroy(g);
}

// An artifact for a chip carries the governor's defaults (skip=1 for one prime core);
// kiln_artifact_info gives them, "" when there are none.
TEST(RuntimeGovernor, ArtifactCarriesTheChipsDefaults) {
  for (const char *defaults : {"", "skip=1"}) {
    auto c = fakeContents();
    c.target.governor = defaults;
    TempFile f(kiln::artifact::serializeArtifact(c));
    kiln_artifact_t *a = nullptr;
    kiln_error_t err;
    ASSERT_EQ(kiln_artifact_open(f.path().c_str(), nullptr, &a, &err), KILN_STATUS_OK);
    kiln_artifact_info_t info;
    kiln_artifact_info(a, &info);
    EXPECT_STREQ(info.governor_defaults, defaults);
    kiln_artifact_close(a);
  }
}

// thread_nice: the workers run at it (raising the value needs no privilege); out of range
// is refused.
TEST_F(RuntimePlacement, WorkersTakeTheNiceValue) {
  kiln_session_options_t o = kiln_session_options_default();
  o.n_threads = 3;
  o.thread_nice = 10;
  kiln_session_t *s = nullptr;
  ASSERT_EQ(kiln_session_create(a, &o, &s, &err), KILN_STATUS_OK) << err.message;
  kiln_session_stats_t st;
  kiln_session_stats(s, &st);
  EXPECT_EQ(st.niced_threads, 2u) << "both workers (the caller's thread is the app's)";
  int32_t tok = 3;
  ASSERT_EQ(kiln_session_prefill(s, &tok, 1, &err), KILN_STATUS_OK);
  ASSERT_EQ(kiln_session_decode(s, 4, &err), KILN_STATUS_OK);
  kiln_session_destroy(s);
  o.thread_nice = 25;
  EXPECT_EQ(kiln_session_create(a, &o, &s, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("thread_nice 25"), std::string::npos);
}

} // namespace
