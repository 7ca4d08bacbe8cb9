//===- HostTargets.h - the x86-64 targets kiln generates code for ---------===//
#ifndef KILN_CODEGEN_TARGETS_HOSTTARGETS_H
#define KILN_CODEGEN_TARGETS_HOSTTARGETS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

// The facts of one CPU target kiln generates code for (an x86-64 level here, a chip
// profile's aarch64 cores or Hexagon DSP in ChipTargets.h); codegen/cpu/CpuBackend.h makes
// it a TargetBackend.
struct CpuTarget {
  std::string name;    // "x86-64-v3", "snapdragon-8-gen-3:cpu"
  std::string triple;  // LLVM triple
  std::string cpu;     // LLVM CPU name (the ISA level the code may use)
  std::string tuneCpu; // LLVM CPU to schedule for ("" = cpu): a chip's prime core
  std::vector<std::string> requiredFeatures; // checked by the runtime before loading code
  const unsigned char *bitcode = nullptr;    // micro-kernels for this target
  size_t bitcodeSize = 0;
  unsigned rowAlignBytes = 64; // plain weight rows' alignment (passes/layout): the cache
                               // line, or the vector for Hexagon HVX
  // Per-core cache the prefill token panels are sized to (passes/layout
  // kiln-size-prefill-panels), and where the number came from: "profile" (the prime
  // cluster's l2_kib) or "assumed" (the profile gives none; docs/targets.md). The x86
  // levels assume 1 MiB, the L2 per core of Zen 4/5 and the smallest of recent Intel cores.
  unsigned prefillCacheKib = 1024;
  std::string prefillCacheFrom = "assumed";
  // L2 the decode weight shards are sized to (kiln-size-weight-shards), for kernels that
  // prefetch each next shard themselves (HVX: l2fetch); 0 where the hardware's stream
  // prefetchers follow the weights (x86 and Arm cores; on x86 software prefetch measured
  // no gain, codegen/cpu/ukernels/x86/linear_packed.c).
  unsigned shardCacheKib = 0;
  std::string shardCacheFrom = "assumed";
  // Rows per group of the repacked int4/int8 weights (kiln-assign-layout, --layout packed):
  // 16 for the x86 and NEON kernels; one 32-bit lane per row of an HVX vector for Hexagon
  // (the profile's hvx_bytes / 4), so a vrmpy's every lane is a row.
  unsigned packRows = 16;
  // The runtime governor's SPEC defaults the artifact carries (kiln/governor.h): for a
  // chip's cores, skip=<prime cores> (ChipTargets.h, governorDefaults); "" on x86.
  std::string governorDefaults;
};

// Known targets by name; "host" picks the best one the build machine runs.
const CpuTarget *findHostTarget(const std::string &name, std::string &error);
std::vector<std::string> hostTargetNames();

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_HOSTTARGETS_H
