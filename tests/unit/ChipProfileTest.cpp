//===- ChipProfileTest.cpp - the chip profile reader and its validation ----===//
#include <gtest/gtest.h>

#include <set>

#include "codegen/targets/ChipProfile.h"
#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/ChipTargets.h"

using namespace kiln::codegen;

namespace {

// A complete soc profile; each test breaks one thing.
const std::string kGood = R"(name: test-soc
display_name: Test SoC
kind: soc
cpu:
  arch: armv9.2-a
  features: [neon, fp16, dotprod, i8mm]
  vector_bits: 128        # [trm]
  cache_line_bytes: 64    # [trm]
  llvm_cpu: cortex-x4
  clusters:
    - {role: prime, count: 1, core: cortex-x4, max_ghz: 3.3, l2_kib: 2048} # [brief]
    - {role: efficiency, count: 4, core: cortex-a520, max_ghz: 2.0}       # [brief]
  l3_kib: 8192            # [brief]
hexagon:
  version: v75
  llvm_cpu: hexagonv73
  hvx_bytes: 128          # [brief]
  vtcm_kib: 8192          # [brief]
  l2_kib: 1024            # [brief]
memory:
  type: LPDDR5X
  mts: 9600               # [brief]
  bus_bits: 64            # [brief]
  bandwidth_gbs: 76.8     # [brief]
sources:
  - id: brief
    cite: "Vendor, product brief"
  - id: trm
    cite: "Arm, Cortex-X4 TRM"
estimated:
  - field: hexagon.vtcm_kib
    why: "not published"
)";

std::string replaced(const std::string &from, const std::string &to) {
  std::string s = kGood;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

// The one-line error loadChipProfile gives for `text`.
std::string errorOf(const std::string &text) {
  std::string error;
  EXPECT_FALSE(loadChipProfile(text, "bad.yaml", error).has_value());
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

} // namespace

TEST(ChipProfile, GoodProfileReadsEveryField) {
  std::string error;
  std::optional<ChipProfile> p = loadChipProfile(kGood, "good.yaml", error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->name, "test-soc");
  ASSERT_TRUE(p->cpu && p->hexagon && p->memory);
  EXPECT_EQ(p->cpu->features, (std::vector<std::string>{"neon", "fp16", "dotprod", "i8mm"}));
  ASSERT_EQ(p->cpu->clusters.size(), 2u);
  EXPECT_EQ(p->cpu->clusters[0].l2Kib, 2048);
  EXPECT_FALSE(p->cpu->clusters[1].l2Kib.has_value());
  EXPECT_DOUBLE_EQ(p->cpu->clusters[1].maxGhz, 2.0);
  EXPECT_EQ(p->hexagon->vtcmKib, 8192);
  EXPECT_EQ(p->hexagon->l2Kib, 1024);
  EXPECT_DOUBLE_EQ(p->memory->bandwidthGbs, 76.8);
  EXPECT_TRUE(p->isEstimated("hexagon.vtcm_kib"));
  EXPECT_FALSE(p->isEstimated("memory.mts"));
  EXPECT_EQ(p->engines(), (std::vector<std::string>{"cpu", "hvx"}));
}

TEST(ChipProfile, RoundTripThroughTheWriter) {
  std::string error;
  std::optional<ChipProfile> p = parseChipProfile(kGood, "good.yaml", error);
  ASSERT_TRUE(p) << error;
  std::string written = writeChipProfile(*p);
  std::optional<ChipProfile> q = parseChipProfile(written, "written.yaml", error);
  ASSERT_TRUE(q) << error << "\n" << written;
  EXPECT_EQ(writeChipProfile(*q), written);
  EXPECT_EQ(q->cpu->clusters[0].l2Kib, 2048);
  EXPECT_EQ(q->hexagon->l2Kib, 1024);
  EXPECT_EQ(q->sources.size(), 2u);
  EXPECT_EQ(q->estimated[0].field, "hexagon.vtcm_kib");
}

TEST(ChipProfile, EveryBuiltinProfileLoadsAndRoundTrips) {
  const auto &all = builtinProfiles();
  std::set<std::string> names;
  for (const BuiltinProfile &b : all) {
    names.insert(b.profile.name);
    EXPECT_EQ(b.file, "codegen/targets/" + b.profile.name + ".yaml");
    std::string error;
    std::optional<ChipProfile> q =
        parseChipProfile(writeChipProfile(b.profile), b.file, error);
    ASSERT_TRUE(q) << error;
    EXPECT_EQ(writeChipProfile(*q), writeChipProfile(b.profile));
    if (b.profile.kind == "soc") {
      EXPECT_TRUE(b.profile.memory.has_value()) << b.file;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"armv8.2-a+dotprod", "dimensity-9300", "exynos-2400",
                                          "hexagon-v67", "hexagon-v73", "snapdragon-8-elite",
                                          "snapdragon-8-gen-3", "tensor-g4"}));
  // Only the Snapdragons have a Hexagon DSP; every phone SoC describes its GPU.
  EXPECT_TRUE(findBuiltinProfile("snapdragon-8-gen-3")->profile.hexagon.has_value());
  EXPECT_FALSE(findBuiltinProfile("dimensity-9300")->profile.hexagon.has_value());
  for (const BuiltinProfile &b : all)
    EXPECT_EQ(b.profile.gpu.has_value(), b.profile.kind == "soc") << b.file;
  const GpuEngine &adreno = *findBuiltinProfile("snapdragon-8-gen-3")->profile.gpu;
  EXPECT_EQ(adreno.name, "Adreno 750");
  EXPECT_EQ(adreno.subgroupSizes, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(findBuiltinProfile("tensor-g4")->profile.gpu->subgroupSizes,
            (std::vector<int64_t>{16}));
  EXPECT_EQ(findBuiltinProfile("exynos-2400")->profile.engines(),
            (std::vector<std::string>{"cpu", "gpu"}));
}

TEST(ChipProfile, MissingFieldNamesFileAndField) {
  std::string e = errorOf(replaced("  bandwidth_gbs: 76.8     # [brief]\n", ""));
  EXPECT_EQ(e.rfind("bad.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("memory: missing required key 'bandwidth_gbs'"), std::string::npos) << e;
  e = errorOf(replaced("core: cortex-a520, ", ""));
  EXPECT_NE(e.find("cpu.clusters"), std::string::npos) << e;
  EXPECT_NE(e.find("missing required key 'core'"), std::string::npos) << e;
}

TEST(ChipProfile, NegativeBandwidth) {
  EXPECT_EQ(errorOf(replaced("bandwidth_gbs: 76.8", "bandwidth_gbs: -76.8")),
            "bad.yaml: memory.bandwidth_gbs: must be positive, got -76.800000");
}

TEST(ChipProfile, UnknownIsaFeature) {
  std::string e = errorOf(replaced("i8mm]", "i8mm, avx512]"));
  EXPECT_EQ(e.rfind("bad.yaml: cpu.features: unknown ISA feature 'avx512'", 0), 0u) << e;
  EXPECT_NE(errorOf(replaced("[neon, fp16,", "[neon, fp16, fp16,")).find("listed twice"),
            std::string::npos);
}

TEST(ChipProfile, ValueChecksNameTheirField) {
  auto expectField = [](const std::string &text, const std::string &what) {
    std::string e = errorOf(text);
    EXPECT_NE(e.find(what), std::string::npos) << e;
  };
  expectField(replaced("bandwidth_gbs: 76.8", "bandwidth_gbs: 60.0"),
              "memory.bandwidth_gbs: 60.000000 disagrees with mts x bus_bits / 8 = 76.800000");
  expectField(replaced("vector_bits: 128", "vector_bits: 100"), "cpu.vector_bits:");
  expectField(replaced("cache_line_bytes: 64", "cache_line_bytes: 48"), "cpu.cache_line_bytes:");
  expectField(replaced("llvm_cpu: cortex-x4", "llvm_cpu: cortex-x99"), "cpu.llvm_cpu:");
  expectField(replaced("llvm_cpu: hexagonv73", "llvm_cpu: hexagonv75"), "hexagon.llvm_cpu:");
  expectField(replaced("hvx_bytes: 128", "hvx_bytes: 96"), "hexagon.hvx_bytes:");
  expectField(replaced("  vtcm_kib: 8192          # [brief]\n", ""), "hexagon.vtcm_kib:");
  expectField(replaced("l2_kib: 1024", "l2_kib: 32"), "hexagon.l2_kib: must be in 64..1048576");
  expectField(replaced("count: 4,", "count: 0,"), "cpu.clusters.count:");
  expectField(replaced("max_ghz: 2.0", "max_ghz: 0"), "cpu.clusters.max_ghz:");
  expectField(replaced("role: prime", "role: turbo"), "cpu.clusters.role:");
  expectField(replaced("kind: soc", "kind: phone"), "kind:");
  expectField(replaced("name: test-soc", "name: Test:SoC"), "name:");
  expectField(replaced("field: hexagon.vtcm_kib", "field: hexagon.vtcm"), "estimated.field:");
  expectField(replaced("  - id: trm", "  - id: brief"), "sources: id 'brief' is used twice");
  // A soc needs its DRAM; a generic profile may leave it out.
  std::string noMemory = kGood.substr(0, kGood.find("memory:")) +
                         kGood.substr(kGood.find("sources:"));
  expectField(noMemory, "memory: a soc profile describes its DRAM");
}

TEST(ChipProfile, YamlErrorsCarryLineAndField) {
  std::string e = errorOf(replaced("mts: 9600", "mts: fast"));
  EXPECT_EQ(e.rfind("bad.yaml:22:8: memory.mts: invalid number", 0), 0u) << e;
  // A misspelt key: the real one is missing (YAML I/O stops there), an extra one unknown.
  e = errorOf(replaced("  bus_bits:", "  bus_width:"));
  EXPECT_NE(e.find("memory: missing required key 'bus_bits'"), std::string::npos) << e;
  e = errorOf(replaced("  type: LPDDR5X\n", "  type: LPDDR5X\n  channels: four\n"));
  EXPECT_NE(e.find("memory: unknown key 'channels'"), std::string::npos) << e;
  EXPECT_EQ(errorOf("- just\n- a list\n"), "bad.yaml:1:1: not a mapping");
  EXPECT_EQ(errorOf(""), "bad.yaml: not a YAML mapping");
  EXPECT_EQ(errorOf("name: [a\n"), "bad.yaml:1:9: name: Could not find closing ]!");
}

TEST(ChipProfile, EveryNumberNeedsAKnownSource) {
  EXPECT_EQ(errorOf(replaced("bus_bits: 64            # [brief]", "bus_bits: 64")),
            "bad.yaml:23: 'bus_bits: 64': a number without a source (add a comment with "
            "[source-id])");
  EXPECT_EQ(errorOf(replaced("bus_bits: 64            # [brief]", "bus_bits: 64 # [jedec]")),
            "bad.yaml:23: 'bus_bits: 64': source tag [jedec] names no entry of sources");
  std::string error;
  // The rule is the loader's: the reader alone accepts the same text.
  EXPECT_TRUE(parseChipProfile(replaced("bus_bits: 64            # [brief]", "bus_bits: 64"),
                               "x", error))
      << error;
}

// <chip>:cpu targets: the profile's features pick the kernel variant and what the runtime
// checks; the prime core schedules the code; no dotprod is refused with one line.
TEST(ChipTargets, ProfileFeaturesPickTheKernelVariant) {
  std::string error;
  std::optional<ChipProfile> p = loadChipProfile(kGood, "good.yaml", error);
  ASSERT_TRUE(p) << error;
  const CpuTarget *t = chipCpuTarget(*p, error);
  ASSERT_NE(t, nullptr) << error;
  EXPECT_EQ(t->name, "test-soc:cpu");
  EXPECT_EQ(t->triple, "aarch64-unknown-linux-gnu");
  EXPECT_EQ(t->tuneCpu, "cortex-x4");
  EXPECT_EQ(t->requiredFeatures, (std::vector<std::string>{"neon", "dotprod", "i8mm"}));
  ASSERT_NE(t->bitcode, nullptr);
  EXPECT_GT(t->bitcodeSize, 1000u);

  std::optional<ChipProfile> q = loadChipProfile(
      replaced("features: [neon, fp16, dotprod, i8mm]", "features: [neon, fp16, dotprod]"),
      "dotprod.yaml", error);
  ASSERT_TRUE(q) << error;
  const CpuTarget *u = chipCpuTarget(*q, error);
  ASSERT_NE(u, nullptr) << error;
  EXPECT_EQ(u->requiredFeatures, (std::vector<std::string>{"neon", "dotprod"}));
  EXPECT_NE(u->bitcode, t->bitcode); // the dotprod-only variant, not the i8mm one

  std::optional<ChipProfile> old = loadChipProfile(
      replaced("features: [neon, fp16, dotprod, i8mm]", "features: [neon, fp16]"), "a75.yaml",
      error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(chipCpuTarget(*old, error), nullptr);
  EXPECT_EQ(error, "kiln's aarch64 micro-kernels need neon and dotprod (Armv8.2-A+dotprod or "
                   "later); profile 'test-soc' lists only: neon,fp16");
}

// <chip>:hvx targets size prefill panels and decode weight shards (kiln-size-weight-shards,
// whose kernels prefetch with l2fetch) to the profile's hexagon.l2_kib, else to an assumed
// 512 KiB; the cpu engine's hardware prefetchers need no shards.
TEST(ChipTargets, HexagonL2SizesShards) {
  std::string error;
  std::optional<ChipProfile> p = loadChipProfile(kGood, "good.yaml", error);
  ASSERT_TRUE(p) << error;
  const CpuTarget *t = chipHvxTarget(*p, error);
  ASSERT_NE(t, nullptr) << error;
  EXPECT_EQ(t->shardCacheKib, 1024u);
  EXPECT_EQ(t->shardCacheFrom, "profile");
  EXPECT_EQ(t->prefillCacheKib, 1024u);
  const CpuTarget *cpu = chipCpuTarget(*p, error);
  ASSERT_NE(cpu, nullptr) << error;
  EXPECT_EQ(cpu->shardCacheKib, 0u);

  std::optional<ChipProfile> q =
      loadChipProfile(replaced("  l2_kib: 1024            # [brief]\n", ""), "nol2.yaml", error);
  ASSERT_TRUE(q) << error;
  const CpuTarget *u = chipHvxTarget(*q, error);
  ASSERT_NE(u, nullptr) << error;
  EXPECT_EQ(u->shardCacheKib, 512u);
  EXPECT_EQ(u->shardCacheFrom, "assumed");
}

// The thermal section (kiln thermal-sim): read, and checked value by value.
TEST(ChipProfile, ThermalSection) {
  const std::string thermal = R"(thermal:
  ambient_c: 25                     # [brief]
  die_heat_capacity_j_per_k: 2.0    # [brief]
  die_to_skin_k_per_w: 2.5          # [brief]
  skin_heat_capacity_j_per_k: 150   # [brief]
  skin_to_ambient_k_per_w: 3.6      # [brief]
  throttle_die_c: 95                # [brief]
  throttle_skin_c: 43               # [brief]
  idle_w: 0.6                       # [brief]
  dram_pj_per_byte: 64              # [brief]
  cores:
    - {core: cortex-x4, watts: 4.0, stream_gbs: 20}    # [brief]
    - {core: cortex-a520, watts: 0.35, stream_gbs: 4}  # [brief]
sources:
)";
  const std::string good = replaced("sources:\n", thermal);
  std::string error;
  std::optional<ChipProfile> p = loadChipProfile(good, "good.yaml", error);
  ASSERT_TRUE(p) << error;
  ASSERT_TRUE(p->thermal.has_value());
  EXPECT_DOUBLE_EQ(p->thermal->skinToAmbientKPerW, 3.6);
  EXPECT_EQ(p->thermal->cores.size(), 2u);
  EXPECT_EQ(writeChipProfile(*parseChipProfile(writeChipProfile(*p), "x", error)),
            writeChipProfile(*p));
  auto errorIn = [&](const std::string &from, const std::string &to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    std::string e;
    EXPECT_FALSE(loadChipProfile(text, "bad.yaml", e).has_value());
    return e;
  };
  EXPECT_NE(errorIn("throttle_skin_c: 43", "throttle_skin_c: 20")
                .find("thermal.throttle_skin_c: must be in [25, 80], got 20"),
            std::string::npos);
  EXPECT_NE(errorIn("die_to_skin_k_per_w: 2.5", "die_to_skin_k_per_w: -1")
                .find("thermal.die_to_skin_k_per_w: must be in"),
            std::string::npos);
  EXPECT_NE(errorIn("    - {core: cortex-a520, watts: 0.35, stream_gbs: 4}  # [brief]\n", "")
                .find("thermal.cores: no entry for the cluster core 'cortex-a520'"),
            std::string::npos);
  EXPECT_NE(errorIn("watts: 4.0,", "watts: 0,").find("thermal.cores.watts"), std::string::npos);
  EXPECT_NE(errorIn("idle_w: 0.6                       # [brief]", "idle_w: 0.6")
                .find("a number without a source"),
            std::string::npos);
}

// The gpu engine: read, written back unchanged, checked value by value, every fact sourced.
TEST(ChipProfile, GpuSection) {
  const std::string gpu = R"(gpu:
  name: Test GPU
  vendor: arm
  api_version: 1.3          # [brief]
  subgroup_sizes: [16, 32]  # [brief]
  shared_memory_kib: 32     # [brief]
  fp16: true                # [brief]
  int8_dot: true            # [brief]
  int8_dot_accelerated: true # [brief]
  shader_cores: 12          # [brief]
memory:
)";
  const std::string good = replaced("memory:\n", gpu) + R"(  - field: gpu.subgroup_sizes
    why: "a test"
)";
  std::string error;
  std::optional<ChipProfile> p = loadChipProfile(good, "good.yaml", error);
  ASSERT_TRUE(p) << error;
  ASSERT_TRUE(p->gpu.has_value());
  EXPECT_EQ(p->gpu->apiVersion, "1.3");
  EXPECT_EQ(p->gpu->subgroupSizes, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(p->gpu->sharedMemoryKib, 32);
  EXPECT_TRUE(p->gpu->fp16 && p->gpu->int8Dot && *p->gpu->int8DotAccelerated);
  EXPECT_EQ(p->gpu->shaderCores, 12);
  EXPECT_TRUE(p->isEstimated("gpu.subgroup_sizes"));
  EXPECT_EQ(p->engines(), (std::vector<std::string>{"cpu", "hvx", "gpu"}));
  std::string written = writeChipProfile(*p);
  std::optional<ChipProfile> q = parseChipProfile(written, "written.yaml", error);
  ASSERT_TRUE(q) << error << "\n" << written;
  EXPECT_EQ(writeChipProfile(*q), written);
  EXPECT_EQ(q->gpu->subgroupSizes, p->gpu->subgroupSizes);
  EXPECT_EQ(q->gpu->apiVersion, "1.3");

  auto errorIn = [&](const std::string &from, const std::string &to) {
    std::string text = good;
    EXPECT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
    return errorOf(text);
  };
  EXPECT_EQ(errorIn("[16, 32]", "[16, 48]"),
            "bad.yaml: gpu.subgroup_sizes: 48 is not a power of two in [1, 128]");
  EXPECT_EQ(errorIn("[16, 32]", "[256]"),
            "bad.yaml: gpu.subgroup_sizes: 256 is not a power of two in [1, 128]");
  EXPECT_EQ(errorIn("[16, 32]", "[32, 16]"),
            "bad.yaml: gpu.subgroup_sizes: list each size once, smallest first");
  EXPECT_EQ(errorIn("[16, 32]  # [brief]", "[]"),
            "bad.yaml: gpu.subgroup_sizes: list at least one subgroup size");
  EXPECT_EQ(errorIn("shared_memory_kib: 32", "shared_memory_kib: 8"),
            "bad.yaml: gpu.shared_memory_kib: must be in [16, 1024], got 8");
  EXPECT_EQ(errorIn("vendor: arm", "vendor: acme"),
            "bad.yaml: gpu.vendor: unknown GPU vendor 'acme' (known: amd, arm, imagination, "
            "qualcomm, samsung)");
  EXPECT_EQ(errorIn("api_version: 1.3", "api_version: 2.0"),
            "bad.yaml: gpu.api_version: must be a Vulkan version such as 1.3, got '2.0'");
  EXPECT_EQ(errorIn("api_version: 1.3", "api_version: 1.x"),
            "bad.yaml: gpu.api_version: must be a Vulkan version such as 1.3, got '1.x'");
  EXPECT_EQ(errorIn("int8_dot: true ", "int8_dot: false"),
            "bad.yaml: gpu.int8_dot: Vulkan 1.3 requires integer dot products");
  {
    std::string text = good; // before Vulkan 1.3 the dot product may be missing
    text.replace(text.find("api_version: 1.3"), 16, "api_version: 1.2");
    text.replace(text.find("int8_dot: true "), 15, "int8_dot: false");
    EXPECT_EQ(errorOf(text), "bad.yaml: gpu.int8_dot_accelerated: needs int8_dot");
  }
  EXPECT_EQ(errorIn("shader_cores: 12", "shader_cores: 0"),
            "bad.yaml: gpu.shader_cores: must be in [1, 1024], got 0");
  EXPECT_NE(errorIn("  shared_memory_kib: 32     # [brief]\n", "")
                .find("gpu: missing required key 'shared_memory_kib'"),
            std::string::npos);
  EXPECT_NE(errorIn("fp16: true", "fp16: often").find("gpu.fp16: invalid boolean"),
            std::string::npos);
  // Every fact carries a source: numbers, lists of them and yes/no alike.
  EXPECT_NE(errorIn("[16, 32]  # [brief]", "[16, 32]")
                .find("'subgroup_sizes: [16, 32]': a number without a source"),
            std::string::npos);
  EXPECT_NE(errorIn("fp16: true                # [brief]", "fp16: true")
                .find("'fp16: true': a yes/no without a source"),
            std::string::npos);
  EXPECT_NE(errorIn("1.3          # [brief]", "1.3          # [khronos]")
                .find("source tag [khronos] names no entry of sources"),
            std::string::npos);
  EXPECT_EQ(errorIn("field: gpu.subgroup_sizes", "field: gpu.name"),
            "bad.yaml: estimated.field: 'gpu.name' is not a numeric or yes/no field of a profile");

  // A generic profile may describe only a GPU.
  std::string gpuOnly = "name: test-gpu\ndisplay_name: Test GPU\nkind: generic\n" +
                        gpu.substr(0, gpu.find("memory:")) +
                        "sources:\n  - id: brief\n    cite: \"a test\"\n";
  std::optional<ChipProfile> g = loadChipProfile(gpuOnly, "gpu.yaml", error);
  ASSERT_TRUE(g) << error;
  EXPECT_EQ(g->engines(), (std::vector<std::string>{"gpu"}));
}
