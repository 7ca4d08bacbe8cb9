//===- ChipProfile.h - one phone SoC (or generic ISA level) as data -------===//
//
// A chip profile is a YAML file in codegen/targets/ (format: docs/targets.md): the
// application cores (ISA features, vector width, cache line, clusters), the Hexagon DSP's
// HVX unit when the SoC has one, the GPU as a Vulkan device, and the DRAM. Every number
// carries a public source (a `[id]` comment naming an entry of `sources:`); estimated
// numbers are listed under `estimated:`. Read with LLVM's YAML I/O; no MLIR here.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_CHIPPROFILE_H
#define KILN_CODEGEN_TARGETS_CHIPPROFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::codegen {

struct CoreCluster {
  std::string role;  // prime | performance | efficiency
  int64_t count = 0; // cores in the cluster
  std::string core;  // cortex-x4, oryon, ...
  double maxGhz = 0; // highest clock of the cluster
  std::optional<int64_t> l2Kib; // private L2 per core (or per cluster, see the note)
};

struct CpuEngine {
  std::string arch;                  // armv9.2-a, armv8.2-a, ...
  std::vector<std::string> features; // subset of knownCpuFeatures()
  int64_t vectorBits = 0;            // NEON (and SVE vector length) in bits
  int64_t cacheLineBytes = 0;
  std::string llvmCpu;               // LLVM's -mcpu for tuning (the prime core)
  std::vector<CoreCluster> clusters; // empty only in a generic profile
  std::optional<int64_t> l3Kib;      // shared L3 of the CPU complex
};

struct HexagonEngine {
  std::string version;              // v73, v75, v79
  std::string llvmCpu;              // hexagonv73: the newest LLVM 19 knows
  int64_t hvxBytes = 0;             // HVX vector length
  std::optional<int64_t> vtcmKib;   // tightly coupled vector memory; required on a SoC
  std::optional<int64_t> l2Kib;     // the DSP's L2 (weight shards, prefill panels); optional
};

// The GPU as Vulkan shows it to a compute shader. It reads the SoC's DRAM, so its
// bandwidth is memory.bandwidth_gbs (no separate figure).
struct GpuEngine {
  std::string name;                       // Adreno 750, Immortalis-G720, ...
  std::string vendor;                     // of knownGpuVendors(): picks the vendor's heuristics
  std::string apiVersion;                 // Vulkan version the driver reports, MAJOR.MINOR
  std::vector<int64_t> subgroupSizes;     // sizes a pipeline can require, ascending
  int64_t sharedMemoryKib = 0;            // maxComputeSharedMemorySize per workgroup
  bool fp16 = false;                      // shaderFloat16: fp16 arithmetic in shaders
  bool int8Dot = false;                   // shaderIntegerDotProduct (required by Vulkan 1.3)
  std::optional<bool> int8DotAccelerated; // integerDotProduct4x8BitPackedSignedAccelerated
  std::optional<int64_t> shaderCores;     // Arm's MCn; other vendors' units differ
  std::optional<double> fp32Gflops;       // peak fp32 throughput (an FMA is 2 FLOPs)
  std::optional<double> fp16Gflops;       // peak fp16 throughput
};

struct DramSystem {
  std::string type;        // LPDDR5X, LPDDR5T, ...
  int64_t mts = 0;         // transfers per second, millions
  int64_t busBits = 0;     // total width of the channels
  double bandwidthGbs = 0; // theoretical peak, 1e9 bytes/s
};

// One core type's share of the thermal model: power at its cluster's top clock running
// decode, and the DRAM read bandwidth one such core streams on its own.
struct CorePower {
  std::string core;      // a cpu.clusters core name
  double watts = 0;      // per core, at max_ghz, under decode
  double streamGbs = 0;  // one core's streaming read, 1e9 bytes/s
};

// The SoC as two heat capacities (die, then the phone's body up to its skin) behind
// thermal resistances, with the points where the OS cuts the clocks: what `kiln
// thermal-sim` runs the governor against (docs/targets.md, "Thermal model").
struct ThermalModel {
  double ambientC = 25;
  double dieHeatCapacityJPerK = 0;
  double dieToSkinKPerW = 0;
  double skinHeatCapacityJPerK = 0;
  double skinToAmbientKPerW = 0;
  double throttleDieC = 0;   // the OS steps the CPU clocks down above either
  double throttleSkinC = 0;
  double idleW = 0;          // the rest of the SoC while the model runs (no display)
  double dramPjPerByte = 0;  // DRAM, controller and fabric energy per byte read
  std::vector<CorePower> cores;
};

struct ProfileSource {
  std::string id;   // the tag used in comments, e.g. qc-8g3-brief
  std::string cite; // publisher, title and where it is published
};

struct EstimatedField {
  std::string field; // dotted path, e.g. memory.mts
  std::string why;
};

struct ChipProfile {
  std::string name;        // snapdragon-8-gen-3: the target name's chip part
  std::string displayName; // Snapdragon 8 Gen 3
  std::string kind;        // soc | generic
  std::optional<CpuEngine> cpu;
  std::optional<HexagonEngine> hexagon;
  std::optional<GpuEngine> gpu;
  std::optional<DramSystem> memory; // required on a SoC
  std::optional<ThermalModel> thermal; // optional; `kiln thermal-sim` needs it
  std::vector<ProfileSource> sources;
  std::vector<EstimatedField> estimated;
  std::string notes;

  bool isEstimated(const std::string &field) const;
  // "cpu", "hvx", "gpu": the engines a target name can pick (`<name>:cpu`).
  std::vector<std::string> engines() const;
};

// ISA feature names a profile may list (Arm FEAT_* names in LLVM's spelling).
const std::vector<std::string> &knownCpuFeatures();
// GPU vendors gpu.vendor may name (the designer of the GPU, not of the SoC).
const std::vector<std::string> &knownGpuVendors();

// Parses and validates one profile. `file` names it in errors, which are one line:
// "FILE: FIELD: problem" (or "FILE:LINE:COL: problem" for YAML syntax and types).
std::optional<ChipProfile> parseChipProfile(const std::string &yamlText, const std::string &file,
                                            std::string &error);
// The profile as YAML (without comments); parseChipProfile reads it back unchanged.
std::string writeChipProfile(const ChipProfile &profile);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_CHIPPROFILE_H
