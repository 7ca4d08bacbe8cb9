// kiln thermal-sim's model (codegen/targets/ThermalSim.h) with the real governor, on the
// Snapdragon 8 Gen 3 profile and the Llama-3.2-1B q4_0 shape: run flat out the phone
// reaches the OS's skin trip and loses speed; under a skin ceiling below the trip the
// governor keeps it under the trip, on fewer threads, at less energy per token.
#include <gtest/gtest.h>

#include <string>

#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/Roofline.h"
#include "codegen/targets/ThermalSim.h"
#include "kiln/quant_packed.h"

using namespace kiln::codegen;

namespace {

ThermalSimConfig llama1b() {
  ThermalSimConfig c;
  c.seconds = 300;
  c.bytesPerToken = 728950784; // kiln predict --shape llama-3.2-1b (q4_0, f16 KV at 1024)
  c.macsPerToken = 1.3e9;
  c.kernelFormat = KILN_TYPE_Q4_0_R16;
  c.efficiency = kDefaultDecodeEfficiency;
  return c;
}

TEST(ThermalSim, GovernorHoldsTheSkinUnderTheTrip) {
  const ChipProfile &chip = findBuiltinProfile("snapdragon-8-gen-3")->profile;
  ThermalSimConfig cfg = llama1b();
  ThermalRun flat, governed;
  std::string error;
  ASSERT_TRUE(simulateThermal(chip, cfg, flat, error)) << error;
  kiln_governor_config_t g = kiln_governor_config_default();
  g.max_temp_c = 41;
  cfg.governor = &g;
  ASSERT_TRUE(simulateThermal(chip, cfg, governed, error)) << error;

  ASSERT_EQ(flat.samples.size(), 300u);
  EXPECT_GE(flat.firstThrottleS, 0) << "flat out, the skin reaches the OS's trip";
  EXPECT_GT(flat.peakSkinC, chip.thermal->throttleSkinC);
  EXPECT_LT(flat.samples.back().tokS, 0.8 * flat.samples.front().tokS);
  EXPECT_LT(governed.firstThrottleS, 0) << "the governor keeps the skin under the trip";
  EXPECT_LT(governed.peakSkinC, 41 + 0.5);
  EXPECT_GT(governed.tokens, flat.tokens);
  EXPECT_LT(governed.p99Ms, flat.p99Ms);
  EXPECT_LT(governed.energyJ / double(governed.tokens), flat.energyJ / double(flat.tokens));
  EXPECT_LT(governed.samples.back().threads, flat.samples.back().threads)
      << "bandwidth-bound decode needs fewer than the 8 cores";
  EXPECT_GE(governed.decisions.size(), 295u);
  EXPECT_NE(governed.decisions.front().find("governor t=1.000 temp=25.0(ok)"),
            std::string::npos)
      << governed.decisions.front();
}

TEST(ThermalSim, LongerSessionsArePacedAtTheCeiling) {
  const ChipProfile &chip = findBuiltinProfile("snapdragon-8-gen-3")->profile;
  ThermalSimConfig cfg = llama1b();
  cfg.seconds = 1200;
  kiln_governor_config_t g = kiln_governor_config_default();
  g.max_temp_c = 41;
  cfg.governor = &g;
  ThermalRun run;
  std::string error;
  ASSERT_TRUE(simulateThermal(chip, cfg, run, error)) << error;
  EXPECT_LT(run.firstThrottleS, 0);
  EXPECT_LT(run.peakSkinC, 41 + 1.0);
  bool paced = false;
  for (const std::string &d : run.decisions)
    paced |= d.find("temperature over the ceiling") != std::string::npos;
  EXPECT_TRUE(paced);
}

// skip_fastest = 1: capped, the threads leave the prime core (4 W in the model) for the
// performance cores (1.5 W each): more tokens at less energy over 20 minutes, under the
// same ceiling and never at the OS's trip.
TEST(ThermalSim, CappedDecodeLeavesThePrimeCore) {
  const ChipProfile &chip = findBuiltinProfile("snapdragon-8-gen-3")->profile;
  ThermalSimConfig cfg = llama1b();
  cfg.seconds = 1200;
  kiln_governor_config_t g = kiln_governor_config_default();
  g.max_temp_c = 41;
  cfg.governor = &g;
  ThermalRun stay, move;
  std::string error;
  ASSERT_TRUE(simulateThermal(chip, cfg, stay, error)) << error;
  g.skip_fastest = 1;
  ASSERT_TRUE(simulateThermal(chip, cfg, move, error)) << error;
  EXPECT_GT(double(move.tokens), 1.05 * double(stay.tokens));
  EXPECT_LT(move.energyJ / double(move.tokens), stay.energyJ / double(stay.tokens));
  EXPECT_LT(move.firstThrottleS, 0);
  EXPECT_LT(move.peakSkinC, 41 + 1.0);
  uint32_t skipped = 0;
  for (const ThermalSample &x : move.samples)
    skipped += x.skip == 1;
  EXPECT_GT(skipped, 600u) << "most of a capped session runs off the prime core";
  for (const ThermalSample &x : stay.samples)
    ASSERT_EQ(x.skip, 0u);
}

TEST(ThermalSim, ProfileWithoutThermalModelIsAnError) {
  const ChipProfile &chip = findBuiltinProfile("armv8.2-a+dotprod")->profile;
  ThermalRun run;
  std::string error;
  EXPECT_FALSE(simulateThermal(chip, llama1b(), run, error));
  EXPECT_EQ(error, "armv8.2-a+dotprod has no thermal model (a `thermal:` section, "
                   "docs/targets.md)");
}

} // namespace
