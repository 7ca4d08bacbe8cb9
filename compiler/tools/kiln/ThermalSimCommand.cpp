//===- ThermalSimCommand.cpp - kiln thermal-sim --------------------------------===//
//
// Runs a Llama shape's decode on a chip profile's thermal model twice, flat out and under
// runtime-min's governor, and reports tokens delivered, the time between tokens (p50,
// p99), peak temperatures, time under the OS's clock cap and energy; --svg draws tokens/s,
// temperature and clock over time, --csv writes the per-second samples, --log the
// governor's decisions.
//===----------------------------------------------------------------------===//
#include <cinttypes>
#include <cstdio>
#include <fstream>

#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/ChipTargets.h"
#include "codegen/targets/ThermalSim.h"
#include "compiler/tools/kiln/Commands.h"
#include "compiler/tools/kiln/LlamaShapes.h"
#include "compiler/tools/kiln/ThermalSvg.h"
#include "kiln/quant.h"
#include "kiln/quant_packed.h"

namespace kiln::tool {

namespace {

// The r16 kernel whose llvm-mca cost times the cores: the format most weights use.
bool kernelFormatOf(uint32_t ggml, uint32_t &out) {
  switch (ggml) {
  case KILN_GGML_TYPE_Q4_0: out = KILN_TYPE_Q4_0_R16; return true;
  case KILN_GGML_TYPE_Q4_1: out = KILN_TYPE_Q4_1_R16; return true;
  case KILN_GGML_TYPE_Q8_0: out = KILN_TYPE_Q8_0_R16; return true;
  default: return false;
  }
}

void printRow(const char *name, const codegen::ThermalRun &r, double seconds) {
  char first[32] = "never";
  if (r.firstThrottleS >= 0)
    std::snprintf(first, sizeof first, "%.0f s", r.firstThrottleS);
  std::printf("%-22s %8" PRIu64 " %7.1f %7.1f %7.1f %9.1f %8.1f %11s %9.0f %7.0f %7.3f\n", name,
              r.tokens, double(r.tokens) / seconds, r.p50Ms, r.p99Ms, r.peakSkinC, r.peakDieC,
              first, r.throttledS, r.energyJ, r.tokens ? r.energyJ / double(r.tokens) : 0.0);
}

} // namespace

int runThermalSim(const ThermalSimOptions &opts) {
  LlamaShape shape;
  precision::Rules rules;
  KvFormat kv;
  std::string error;
  if (!resolvePredictModel(opts.model, shape, rules, kv, error))
    return fail(error);
  const codegen::BuiltinProfile *b =
      codegen::findBuiltinProfile(opts.model.chip.substr(0, opts.model.chip.find(':')));
  if (!b)
    return fail("unknown chip '" + opts.model.chip + "' (kiln targets lists them)");
  const codegen::ChipProfile &chip = b->profile;
  uint32_t kernel = 0;
  const uint32_t linear = rules.formatOf("ffn_down");
  if (!kernelFormatOf(linear, kernel))
    return fail("thermal-sim times the cores with the q4_0, q4_1 or q8_0 kernels; the linears "
                "here are " + precision::formatName(linear));

  codegen::ThermalSimConfig cfg;
  cfg.seconds = opts.seconds;
  cfg.bytesPerToken = double(decodeWeightBytes(shape, rules) +
                             kvBytesPerPosition(shape, kv) * opts.model.ctx);
  cfg.macsPerToken = double(decodeMacs(shape, opts.model.ctx));
  cfg.kernelFormat = kernel;
  cfg.threads = opts.threads;
  cfg.efficiency = opts.model.efficiency;
  codegen::ThermalRun flat, governed;
  if (!codegen::simulateThermal(chip, cfg, flat, error))
    return fail(error);
  // The chip's defaults first (an artifact for it carries the same, kiln-run applies them
  // the same way), then the user's keys, which override.
  const std::string chipDefaults = codegen::governorDefaults(chip);
  const std::string spec = chipDefaults.empty() ? opts.governor : chipDefaults + "," + opts.governor;
  kiln_governor_config_t g;
  char storage[1024];
  kiln_error_t err;
  if (kiln_governor_config_parse(spec.c_str(), &g, storage, sizeof storage, &err) !=
      KILN_STATUS_OK)
    return fail(std::string("--governor: ") + err.message);
  cfg.governor = &g;
  if (!codegen::simulateThermal(chip, cfg, governed, error))
    return fail(error);

  std::vector<codegen::SimCore> cores;
  codegen::simCores(chip, kernel, cores, error);
  const codegen::ThermalModel &m = *chip.thermal;
  std::printf("thermal-sim: %s, %s %s, ctx %" PRIu64 ": %.0f bytes and %.3g MACs per token, "
              "%.0f s at %.0f C ambient\n",
              chip.displayName.c_str(), shape.name.c_str(),
              precision::formatName(linear).c_str(), opts.model.ctx, cfg.bytesPerToken,
              cfg.macsPerToken, opts.seconds, m.ambientC);
  std::printf("cores in thread order:");
  for (const codegen::SimCore &c : cores)
    std::printf(" %s@%.2fGHz(%.1f MAC/cycle)", c.name.c_str(), c.ghz, c.macsPerCycle);
  std::printf("\nOS clock cap past die %.0f C or skin %.0f C; governor: %s (reads the skin)\n",
              m.throttleDieC, m.throttleSkinC, spec.c_str());
  std::printf("%-22s %8s %7s %7s %7s %9s %8s %11s %9s %7s %7s\n", "run", "tokens", "tok/s",
              "p50 ms", "p99 ms", "skin max", "die max", "OS throttle", "capped s", "J",
              "J/tok");
  printRow("no governor", flat, opts.seconds);
  printRow("governor", governed, opts.seconds);
  std::printf("(every thermal figure of %s is an estimate: kiln targets %s lists them)\n",
              chip.name.c_str(), chip.name.c_str());

  if (!opts.csv.empty()) {
    std::ofstream f(opts.csv);
    f << "run,t_s,tok_s,die_c,skin_c,clock,power_w,threads,skip\n";
    for (const auto *r : {&flat, &governed})
      for (const codegen::ThermalSample &x : r->samples)
        f << (r == &flat ? "none" : "governor") << ',' << x.t << ',' << x.tokS << ','
          << x.dieC << ',' << x.skinC << ',' << x.clock << ',' << x.powerW << ','
          << x.threads << ',' << x.skip << '\n';
    if (!f)
      return fail("cannot write '" + opts.csv + "'");
  }
  if (!opts.log.empty()) {
    std::ofstream f(opts.log);
    for (const std::string &line : governed.decisions)
      f << line << '\n';
    if (!f)
      return fail("cannot write '" + opts.log + "'");
  }
  if (!opts.svg.empty()) {
    ThermalChart chart;
    chart.title = chip.displayName + ", " + shape.name + " " + precision::formatName(linear) +
                  ": no governor vs governor " + spec;
    chart.flat = &flat;
    chart.governed = &governed;
    chart.throttleSkinC = m.throttleSkinC;
    chart.ceilingC = g.max_temp_c;
    chart.maxThreads = uint32_t(cores.size());
    chart.seconds = opts.seconds;
    std::ofstream f(opts.svg);
    f << thermalSvg(chart);
    if (!f)
      return fail("cannot write '" + opts.svg + "'");
  }
  return 0;
}

} // namespace kiln::tool
