//===- TargetResolver.h - what a --target name denotes --------------------===//
//
// The one place target names are resolved: `host`, an x86-64 level (HostTargets.h), or
// `<chip>:<engine>` with a chip profile (ChipRegistry.h) and engine cpu (the aarch64
// application cores), hvx (the Hexagon DSP's vector units) or gpu (the GPU, as a Vulkan
// device). The aarch64 and Hexagon back ends plug in at findCodegenTarget.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_TARGETRESOLVER_H
#define KILN_CODEGEN_TARGETS_TARGETRESOLVER_H

#include <string>

#include "codegen/targets/ChipProfile.h"
#include "codegen/targets/HostTargets.h"

namespace kiln::codegen {

struct TargetChoice {
  const CpuTarget *host = nullptr;  // an x86-64 target, or
  const ChipProfile *chip = nullptr; // a chip engine:
  std::string engine;                // "cpu", "hvx" or "gpu"
};

// false + one-line error for an unknown name, a chip without an engine, or an engine the
// chip lacks (Dimensity 9300 has no Hexagon DSP).
bool resolveTarget(const std::string &name, TargetChoice &out, std::string &error);

// The CPU target kiln compile generates code for; `<chip>:gpu` is not one (createTargetBackend
// makes it the chip's CPU code plus a Vulkan program).
const CpuTarget *findCodegenTarget(const std::string &name, std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_TARGETRESOLVER_H
