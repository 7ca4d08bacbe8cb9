//===- ThermalSim.cpp - the thermal model and the run loop --------------------===//
#include "codegen/targets/ThermalSim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "codegen/targets/ChipProfile.h"
#include "codegen/targets/KernelCost.h"

namespace kiln::codegen {

namespace {

// How the OS's thermal engine acts: every second, a step of the clock cap down while a
// trip point is passed, a smaller step back up once both are clear by a margin (the
// step-wise policy of Linux thermal zones). Power at a clock share s scales as
// leak + (1 - leak) * s^3 (frequency times voltage squared, voltage roughly with
// frequency); a core's streaming bandwidth, and the bus's (the OS caps the memory
// interconnect with the CPU, devfreq), keep part of their rate at lower clocks.
constexpr double kOsPeriodS = 1.0;
constexpr double kCapStepDown = 0.1, kCapStepUp = 0.05, kCapFloor = 0.3;
constexpr double kDieMarginC = 5.0, kSkinMarginC = 1.0;
constexpr double kLeakShare = 0.15;
constexpr double kStreamAtZeroClock = 0.4;
constexpr double kMaxStepS = 0.05; // integration step of the two-node RC model

double powerShare(double clock) {
  return kLeakShare + (1 - kLeakShare) * clock * clock * clock;
}

int roleRank(const std::string &role) {
  return role == "prime" ? 0 : role == "performance" ? 1 : 2;
}

struct State {
  const ThermalModel *m = nullptr;
  double t = 0, die = 0, skin = 0, clock = 1, nextOsCheck = kOsPeriodS;
  double energy = 0;
  // the current second
  double secEnergy = 0, secStart = 0;
  uint64_t secTokens = 0;
  double lastSecPowerW = 0; // the power sensor: the last full second's mean
  uint32_t threads = 0, skip = 0; // threads on cores [skip, skip + threads)
  ThermalRun *run = nullptr;
};

void closeSecond(State &s) {
  ThermalSample x;
  x.t = s.t;
  const double len = s.t - s.secStart;
  x.tokS = len > 0 ? double(s.secTokens) / len : 0;
  x.dieC = s.die;
  x.skinC = s.skin;
  x.clock = s.clock;
  x.powerW = len > 0 ? s.secEnergy / len : 0;
  x.threads = s.threads;
  x.skip = s.skip;
  s.lastSecPowerW = x.powerW;
  s.run->samples.push_back(x);
  s.secStart = s.t;
  s.secEnergy = 0;
  s.secTokens = 0;
}

// Advances the model by dt seconds at power p.
void advance(State &s, double dt, double p) {
  const ThermalModel &m = *s.m;
  while (dt > 1e-12) {
    double h = std::min({dt, kMaxStepS, s.nextOsCheck - s.t});
    if (h <= 0)
      h = std::min(dt, kMaxStepS);
    const double toSkin = (s.die - s.skin) / m.dieToSkinKPerW;
    const double toAir = (s.skin - m.ambientC) / m.skinToAmbientKPerW;
    s.die += h * (p - toSkin) / m.dieHeatCapacityJPerK;
    s.skin += h * (toSkin - toAir) / m.skinHeatCapacityJPerK;
    s.t += h;
    dt -= h;
    s.energy += p * h;
    s.secEnergy += p * h;
    s.run->peakDieC = std::max(s.run->peakDieC, s.die);
    s.run->peakSkinC = std::max(s.run->peakSkinC, s.skin);
    if (s.clock < 1)
      s.run->throttledS += h;
    if (s.t >= s.nextOsCheck - 1e-12) {
      if (s.die > m.throttleDieC || s.skin > m.throttleSkinC) {
        s.clock = std::max(kCapFloor, s.clock - kCapStepDown);
        if (s.run->firstThrottleS < 0)
          s.run->firstThrottleS = s.t;
      } else if (s.die < m.throttleDieC - kDieMarginC && s.skin < m.throttleSkinC - kSkinMarginC) {
        s.clock = std::min(1.0, s.clock + kCapStepUp);
      }
      s.nextOsCheck += kOsPeriodS;
      closeSecond(s);
    }
  }
}

// The governor's view of the simulation.
double simClock(void *u) { return static_cast<State *>(u)->t; }
int simTemp(void *u, double *out) {
  *out = std::round(static_cast<State *>(u)->skin * 10) / 10; // a 0.1 C thermistor
  return 0;
}
int simPower(void *u, double *out) {
  const State &s = *static_cast<State *>(u);
  if (s.run->samples.empty())
    return 1; // no full second yet
  *out = s.lastSecPowerW;
  return 0;
}
int noHeadroom(void *, double *) { return 1; }
void noSleep(void *, double) {}
void logDecision(void *u, const kiln_governor_decision_t *d) {
  char line[512];
  kiln_governor_format_decision(d, line, sizeof line);
  static_cast<ThermalRun *>(u)->decisions.push_back(line);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty())
    return 0;
  size_t k = size_t(std::min<double>(double(v.size() - 1), std::floor(q * double(v.size()))));
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
  return v[k];
}

} // namespace

bool simCores(const ChipProfile &chip, uint32_t kernelFormat, std::vector<SimCore> &out,
              std::string &error) {
  out.clear();
  if (!chip.thermal || !chip.cpu) {
    error = chip.name + " has no thermal model (a `thermal:` section, docs/targets.md)";
    return false;
  }
  std::vector<CoreCluster> clusters = chip.cpu->clusters;
  std::stable_sort(clusters.begin(), clusters.end(), [](const CoreCluster &a, const CoreCluster &b) {
    return roleRank(a.role) < roleRank(b.role);
  });
  for (const CoreCluster &k : clusters) {
    const CorePower *p = nullptr;
    for (const CorePower &c : chip.thermal->cores)
      if (c.core == k.core)
        p = &c;
    double cycles = 0;
    std::string why = "no llvm-mca row";
    for (const KernelCost &c : kernelCostsFor(k.core))
      if (c.format == kernelFormat && c.tokens == 1) {
        cycles = c.cycles;
        if (*c.noModel)
          why = c.noModel;
      }
    if (!p || !(cycles > 0)) {
      error = "no kernel cost for " + k.core + " (format " + std::to_string(kernelFormat) +
              "): " + why;
      return false;
    }
    for (int64_t i = 0; i < k.count; ++i)
      out.push_back({k.core, k.maxGhz, p->watts, p->streamGbs, 16.0 * 32.0 / cycles});
  }
  return true;
}

bool simulateThermal(const ChipProfile &chip, const ThermalSimConfig &cfg, ThermalRun &run,
                     std::string &error) {
  run = ThermalRun();
  std::vector<SimCore> cores;
  if (!simCores(chip, cfg.kernelFormat, cores, error))
    return false;
  if (!chip.memory || !(cfg.efficiency > 0 && cfg.efficiency <= 1) ||
      !(cfg.bytesPerToken > 0) || !(cfg.macsPerToken > 0) ||
      !(cfg.seconds > 0 && cfg.seconds <= 24 * 3600)) {
    error = "thermal-sim: needs DRAM figures, bytes and MACs per token, an efficiency in "
            "(0, 1] and a duration up to a day";
    return false;
  }
  const ThermalModel &m = *chip.thermal;
  State s;
  s.m = &m;
  s.die = s.skin = m.ambientC;
  s.run = &run;
  const uint32_t most = uint32_t(cores.size());
  s.threads = cfg.threads ? std::min(cfg.threads, most) : most;
  const double dramBps = chip.memory->bandwidthGbs * 1e9 * cfg.efficiency;

  kiln_governor_t *gov = nullptr;
  if (cfg.governor) {
    kiln_governor_config_t g = *cfg.governor;
    g.clock_s = simClock;
    g.read_temp_c = simTemp;
    g.read_power_w = simPower;
    g.read_headroom = noHeadroom;
    g.sleep_s = noSleep;
    g.hook_user = &s;
    g.log = logDecision;
    g.log_user = &run;
    g.max_threads = g.max_threads ? std::min(g.max_threads, s.threads) : s.threads;
    kiln_error_t err;
    if (kiln_governor_create(&g, nullptr, &gov, &err) != KILN_STATUS_OK) {
      error = std::string("governor: ") + err.message;
      return false;
    }
  }
  std::vector<double> gaps;
  double lastToken = 0;
  while (s.t < cfg.seconds) {
    const uint32_t n = s.threads;
    double macRate = 0, stream = 0, coreW = 0;
    for (uint32_t i = s.skip; i < s.skip + n; ++i) {
      macRate += cores[i].macsPerCycle * cores[i].ghz * 1e9 * s.clock;
      stream += cores[i].streamGbs * 1e9 * (kStreamAtZeroClock + (1 - kStreamAtZeroClock) * s.clock);
      coreW += cores[i].watts * powerShare(s.clock);
    }
    const double bus = dramBps * (kStreamAtZeroClock + (1 - kStreamAtZeroClock) * s.clock);
    const double compute =
        std::max(cfg.macsPerToken / macRate, cfg.bytesPerToken / std::min(bus, stream));
    const double p = m.idleW + coreW + m.dramPjPerByte * 1e-12 * cfg.bytesPerToken / compute;
    advance(s, compute, p);
    ++run.tokens;
    ++s.secTokens;
    gaps.push_back(s.t - lastToken);
    lastToken = s.t;
    if (gov) {
      kiln_governor_action_t a;
      kiln_governor_on_token(gov, compute, n, &a);
      s.skip = std::min(a.skip_cores, most - 1);
      s.threads = std::max(1u, std::min(a.threads, most - s.skip));
      if (a.idle_s > 0)
        advance(s, a.idle_s, m.idleW);
    }
  }
  kiln_governor_destroy(gov);
  run.energyJ = s.energy;
  run.p50Ms = percentile(gaps, 0.5) * 1e3;
  run.p99Ms = percentile(gaps, 0.99) * 1e3;
  return true;
}

} // namespace kiln::codegen
