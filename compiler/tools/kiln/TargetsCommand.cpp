//===- TargetsCommand.cpp - kiln targets, kiln predict ----------------------===//
//
// `kiln targets` lists the host targets and the chip profiles' engines, `kiln targets
// NAME` prints one in full, `kiln targets --file F.yaml` checks a profile that is not built
// in. `kiln predict` gives the roofline decode estimate of a Llama shape on a chip.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/GpuRoofline.h"
#include "codegen/targets/HostTargets.h"
#include "codegen/targets/Roofline.h"
#include "codegen/targets/TargetResolver.h"
#include "compiler/tools/kiln/Commands.h"
#include "compiler/tools/kiln/LlamaShapes.h"
#include "kiln/quant.h"

namespace kiln::tool {

using codegen::ChipProfile;

namespace {

std::string join(const std::vector<std::string> &v, const char *sep) {
  std::string s;
  for (const std::string &x : v)
    s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string memoryLine(const ChipProfile &p) {
  if (!p.memory)
    return "no DRAM figures (generic)";
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s %.1f GB/s%s", p.memory->type.c_str(),
                p.memory->bandwidthGbs, p.isEstimated("memory.bandwidth_gbs") ? " (est.)" : "");
  return buf;
}

// The GPU's facts, each estimated one marked; its bandwidth is the SoC's DRAM.
std::string gpuLine(const ChipProfile &p) {
  const codegen::GpuEngine &g = *p.gpu;
  auto est = [&](const char *field) {
    return p.isEstimated(std::string("gpu.") + field) ? " (est.)" : "";
  };
  std::string sizes;
  for (int64_t s : g.subgroupSizes)
    sizes += (sizes.empty() ? "" : "/") + std::to_string(s);
  std::string line = "GPU " + g.name + " (" + g.vendor + ")";
  if (g.shaderCores)
    line += ", " + std::to_string(*g.shaderCores) + " cores" + est("shader_cores");
  line += ", Vulkan " + g.apiVersion + est("api_version") + ", subgroup " + sizes +
          est("subgroup_sizes") + ", " + std::to_string(g.sharedMemoryKib) + " KiB shared" +
          est("shared_memory_kib") + (g.fp16 ? ", fp16" : ", no fp16") + est("fp16") +
          (g.int8Dot ? ", int8 dot" : ", no int8 dot") + est("int8_dot");
  if (g.int8DotAccelerated)
    line += std::string(*g.int8DotAccelerated ? " (accelerated)" : " (not accelerated)") +
            est("int8_dot_accelerated");
  if (g.fp32Gflops)
    line += ", " + std::to_string(int64_t(*g.fp32Gflops)) + " GFLOP/s fp32" + est("fp32_gflops");
  return line + ", " + (p.memory ? "shares " : "") + memoryLine(p);
}

std::string engineLine(const ChipProfile &p, const std::string &engine) {
  if (engine == "gpu")
    return gpuLine(p);
  char buf[512];
  if (engine == "cpu") {
    const codegen::CpuEngine &c = *p.cpu;
    std::string cores;
    double ghz = 0;
    for (const codegen::CoreCluster &k : c.clusters) {
      cores += (cores.empty() ? "" : "+") + std::to_string(k.count);
      ghz = std::max(ghz, k.maxGhz);
    }
    char clock[32];
    std::snprintf(clock, sizeof clock, "%g", ghz); // as published: 3.3, 3.25
    std::string clusters = c.clusters.empty() ? std::string("any cores")
                                              : cores + " cores up to " + clock + " GHz";
    std::snprintf(buf, sizeof buf, "aarch64 %s, %s, %s, %lld-bit, %s", c.llvmCpu.c_str(),
                  clusters.c_str(), join(c.features, "+").c_str(), (long long)c.vectorBits,
                  memoryLine(p).c_str());
  } else {
    const codegen::HexagonEngine &h = *p.hexagon;
    std::string vtcm = h.vtcmKib ? ", VTCM " + std::to_string(*h.vtcmKib) + " KiB" +
                                       (p.isEstimated("hexagon.vtcm_kib") ? " (est.)" : "")
                                 : "";
    if (h.l2Kib)
      vtcm += ", L2 " + std::to_string(*h.l2Kib) + " KiB" +
              (p.isEstimated("hexagon.l2_kib") ? " (est.)" : "");
    std::snprintf(buf, sizeof buf, "Hexagon %s (LLVM %s), HVX %lld-byte%s, %s",
                  h.version.c_str(), h.llvmCpu.c_str(), (long long)h.hvxBytes, vtcm.c_str(),
                  memoryLine(p).c_str());
  }
  return buf;
}

void printHostTarget(const codegen::CpuTarget &t) {
  std::printf("%s: %s, cpu %s\n  requires: %s\n", t.name.c_str(), t.triple.c_str(),
              t.cpu.c_str(), join(t.requiredFeatures, " ").c_str());
}

void printProfile(const ChipProfile &p, const std::string &file, const std::string &text) {
  std::printf("%s: %s, %s profile from %s\n", p.name.c_str(), p.displayName.c_str(),
              p.kind.c_str(), file.c_str());
  for (const std::string &e : p.engines())
    std::printf("  %s:%s  %s\n", p.name.c_str(), e.c_str(), engineLine(p, e).c_str());
  std::printf("\n%s", text.c_str());
  if (!text.empty() && text.back() != '\n')
    std::printf("\n");
}

} // namespace

int runTargets(const TargetsOptions &opts) {
  std::string error;
  if (!opts.file.empty()) {
    std::optional<ChipProfile> p = codegen::loadChipProfileFile(opts.file, error);
    if (!p)
      return fail(error);
    printProfile(*p, opts.file, codegen::writeChipProfile(*p));
    return 0;
  }
  if (!opts.name.empty()) {
    codegen::TargetChoice choice; // an engine must be one the chip has
    if (opts.name.find(':') != std::string::npos &&
        !codegen::resolveTarget(opts.name, choice, error))
      return fail(error);
    std::string chip = opts.name.substr(0, opts.name.find(':'));
    if (const codegen::BuiltinProfile *b = codegen::findBuiltinProfile(chip)) {
      printProfile(b->profile, b->file + " (built in)", b->text);
      return 0;
    }
    std::string hostError;
    if (const codegen::CpuTarget *t = codegen::findHostTarget(opts.name, hostError)) {
      printHostTarget(*t);
      return 0;
    }
    std::vector<std::string> known = codegen::hostTargetNames();
    for (const codegen::BuiltinProfile &b : codegen::builtinProfiles())
      known.push_back(b.profile.name);
    return fail("unknown target '" + opts.name + "' (known: " + join(known, ", ") + ")");
  }

  std::printf("host targets (kiln compile --target NAME):\n");
  std::string hostError;
  const codegen::CpuTarget *host = codegen::findHostTarget("host", hostError);
  std::printf("  %-28s %s\n", "host",
              host ? ("this machine: " + host->name).c_str() : hostError.c_str());
  std::vector<std::string> names = codegen::hostTargetNames();
  for (size_t i = 1; i < names.size(); ++i) {
    const codegen::CpuTarget *t = codegen::findHostTarget(names[i], hostError);
    std::printf("  %-28s x86-64, %s\n", names[i].c_str(),
                join(t->requiredFeatures, "+").c_str());
  }
  std::printf("chip engines (profiles in codegen/targets; :cpu generates aarch64 code, :hvx "
              "Hexagon HVX code, :gpu the :cpu code and a Vulkan program):\n");
  for (const codegen::BuiltinProfile &b : codegen::builtinProfiles())
    for (const std::string &e : b.profile.engines())
      std::printf("  %-28s %s\n", (b.profile.name + ":" + e).c_str(),
                  engineLine(b.profile, e).c_str());
  return 0;
}

int runPredict(const PredictOptions &opts) {
  LlamaShape shape;
  precision::Rules rules;
  KvFormat kv;
  std::string error;
  if (!resolvePredictModel(opts, shape, rules, kv, error))
    return fail(error);

  codegen::DecodeTraffic traffic;
  traffic.weightBytesPerToken = decodeWeightBytes(shape, rules);
  traffic.kvBytesPerPosition = kvBytesPerPosition(shape, kv);
  traffic.contextPositions = opts.ctx;

  std::printf("model: %s (%s): dim %" PRIu64 ", %" PRIu64 " layers, %" PRIu64 " heads / %" PRIu64
              " KV, ffn %" PRIu64 ", vocab %" PRIu64 ", %s embeddings\n",
              shape.name.c_str(), shape.source.c_str(), shape.dim, shape.layers, shape.heads,
              shape.kvHeads, shape.ffn, shape.vocab, shape.tied ? "tied" : "untied");
  std::printf("formats:");
  for (const std::string &c : precision::tensorClasses())
    std::printf(" %s=%s", c.c_str(), precision::formatName(rules.formatOf(c)).c_str());
  std::printf("\nKV cache: %s, %" PRIu64 " bytes per position, read at %" PRIu64
              " positions\n",
              kvFormatName(kv).c_str(), traffic.kvBytesPerPosition, traffic.contextPositions);
  std::printf("weights read per token: %" PRIu64 " bytes (every matrix once, one embedding "
              "row, the norms)\n",
              traffic.weightBytesPerToken);

  const std::string chipName = opts.chip.substr(0, opts.chip.find(':'));
  const bool gpu = opts.engine == "gpu" || (opts.chip.find(':') != std::string::npos &&
                                            opts.chip.substr(opts.chip.find(':') + 1) == "gpu");
  std::vector<const ChipProfile *> chips;
  if (!opts.chip.empty()) {
    const codegen::BuiltinProfile *b = codegen::findBuiltinProfile(chipName);
    if (!b)
      return fail("unknown chip '" + opts.chip + "' (kiln targets lists them)");
    chips.push_back(&b->profile);
  } else {
    for (const codegen::BuiltinProfile &b : codegen::builtinProfiles())
      if (b.profile.memory && (!gpu || (b.profile.gpu && b.profile.gpu->fp32Gflops)))
        chips.push_back(&b.profile);
  }
  if (gpu) {
    codegen::GpuWorkload w;
    w.decode = traffic;
    w.decodeMacs = decodeMacs(shape, opts.ctx);
    w.classifierMacs = shape.vocab * shape.dim;
    // A prompt token attends to half the batch on average (causal); the classifier runs
    // for the batch's last position only.
    w.prefillMacs = decodeMacs(shape, opts.prompt / 2) - w.classifierMacs;
    w.weightBytes = traffic.weightBytesPerToken;
    w.promptTokens = opts.prompt;
    w.dispatchesPerPass = codegen::vulkanDispatchesPerPass(shape.layers);
    codegen::GpuAssumptions a = opts.gpu;
    a.bandwidthEfficiency = opts.efficiency;
    for (const ChipProfile *c : chips) {
      codegen::GpuEstimate e;
      if (!codegen::estimateGpu(w, *c, a, e, error))
        return fail(error);
      std::printf("%s", codegen::formatGpuEstimate(w, *c, a, e).c_str());
    }
    return 0;
  }
  for (const ChipProfile *c : chips) {
    codegen::DecodeEstimate e;
    if (!codegen::estimateDecode(traffic, *c, opts.efficiency, e, error))
      return fail(error);
    std::printf("%s", codegen::formatEstimate(traffic, *c, e).c_str());
  }
  return 0;
}

} // namespace kiln::tool
