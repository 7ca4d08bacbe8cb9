//===- CpuBackend.h - the CPU back end (x86-64, aarch64 NEON, Hexagon HVX) -===//
#ifndef KILN_CODEGEN_CPU_CPUBACKEND_H
#define KILN_CODEGEN_CPU_CPUBACKEND_H

#include <memory>

#include "codegen/common/TargetBackend.h"
#include "codegen/targets/HostTargets.h"

namespace kiln::codegen {

// The back end for one CPU target's facts (HostTargets.h, ChipTargets.h); `target` must
// outlive it (the built-in ones live as long as the program).
std::unique_ptr<TargetBackend> createCpuBackend(const CpuTarget &target);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_CPUBACKEND_H
