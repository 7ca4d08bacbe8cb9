//===- HostTargets.h - the x86-64 targets kiln generates code for ---------===//
#ifndef KILN_CODEGEN_TARGETS_HOSTTARGETS_H
#define KILN_CODEGEN_TARGETS_HOSTTARGETS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

// A target kiln generates code for: an x86-64 level here, or a chip profile's aarch64
// cores (ChipTargets.h). The name is historical: all of them are CPU code.
struct HostTarget {
  std::string name;    // "x86-64-v3", "snapdragon-8-gen-3:cpu"
  std::string triple;  // LLVM triple
  std::string cpu;     // LLVM CPU name (the ISA level the code may use)
  std::string tuneCpu; // LLVM CPU to schedule for ("" = cpu): a chip's prime core
  std::vector<std::string> requiredFeatures; // checked by the runtime before loading code
  const unsigned char *bitcode = nullptr;    // micro-kernels for this target
  size_t bitcodeSize = 0;
  unsigned rowAlignBytes = 64; // plain weight rows' alignment (passes/layout): the cache
                               // line, or the vector for Hexagon HVX
};

// Known targets by name; "host" picks the best one the build machine runs.
const HostTarget *findHostTarget(const std::string &name, std::string &error);
std::vector<std::string> hostTargetNames();

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_HOSTTARGETS_H
