//===- HostTargets.h - the x86-64 targets kiln generates code for ---------===//
#ifndef KILN_CODEGEN_TARGETS_HOSTTARGETS_H
#define KILN_CODEGEN_TARGETS_HOSTTARGETS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct HostTarget {
  std::string name;    // "x86-64-v3"
  std::string triple;  // LLVM triple
  std::string cpu;     // LLVM CPU name
  std::vector<std::string> requiredFeatures; // checked by the runtime before loading code
  const unsigned char *bitcode = nullptr;    // micro-kernels for this target
  size_t bitcodeSize = 0;
};

// Known targets by name; "host" picks the best one the build machine runs.
const HostTarget *findHostTarget(const std::string &name, std::string &error);
std::vector<std::string> hostTargetNames();

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_HOSTTARGETS_H
