//===- ThermalSim.h - decode on a chip profile's thermal model, with the governor -===//
//
// `kiln thermal-sim` runs runtime-min's real governor (kiln/governor.h) on simulated
// sensors: the profile's SoC as two heat capacities (die, then the phone's body up to its
// skin) behind thermal resistances, the OS stepping the CPU clocks down past its trip
// points, and each decoded token's time and power from the cores it runs on (llvm-mca's
// kernel cycles per core, the cores' streaming bandwidth, DRAM energy per byte). Every
// parameter is the profile's `thermal:` section (docs/targets.md, "Thermal model").
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_THERMALSIM_H
#define KILN_CODEGEN_TARGETS_THERMALSIM_H

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "kiln/governor.h"
}

namespace kiln::codegen {

struct ChipProfile;

struct ThermalSimConfig {
  double seconds = 300;
  double bytesPerToken = 0; // weights and KV cache read per token
  double macsPerToken = 0;  // multiply-adds per token
  uint32_t kernelFormat = 0; // KILN_TYPE_*_R16 whose llvm-mca cost times the cores
  uint32_t threads = 0;      // 0: every core; taken prime first, then performance, efficiency
  double efficiency = 0;     // share of the DRAM peak decode reaches (Roofline.h)
  // The governor's config, or null for a run without one. Its clock, sensors and log
  // are the simulator's: temperature is the skin's (what phone thermal policies act on),
  // power the SoC's over the last second.
  const kiln_governor_config_t *governor = nullptr;
};

// One second of the run.
struct ThermalSample {
  double t = 0;        // end of the second
  double tokS = 0;     // tokens finished in it
  double dieC = 0, skinC = 0;
  double clock = 0;    // the OS's clock cap, share of each cluster's top clock
  double powerW = 0;   // mean over the second
  uint32_t threads = 0;
  uint32_t skip = 0;   // fastest cores the threads left (the governor's skip_fastest)
};

struct ThermalRun {
  uint64_t tokens = 0;
  double p50Ms = 0, p99Ms = 0;     // time between consecutive tokens
  double peakDieC = 0, peakSkinC = 0;
  double throttledS = 0;           // seconds under a clock cap
  double firstThrottleS = -1;      // -1: never
  double energyJ = 0;
  std::vector<ThermalSample> samples;
  std::vector<std::string> decisions; // the governor's, one line each
};

// The cores a run may use, in the order threads take them, with what the model needs.
struct SimCore {
  std::string name;
  double ghz = 0, watts = 0, streamGbs = 0;
  double macsPerCycle = 0; // 16 rows x 32 columns / llvm-mca's cycles per block
};
// false + one line when the profile lacks a thermal section or a core's kernel cost.
bool simCores(const ChipProfile &chip, uint32_t kernelFormat, std::vector<SimCore> &out,
              std::string &error);

bool simulateThermal(const ChipProfile &chip, const ThermalSimConfig &config, ThermalRun &out,
                     std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_THERMALSIM_H
