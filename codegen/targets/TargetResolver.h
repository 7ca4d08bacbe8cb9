//===- TargetResolver.h - what a --target name denotes --------------------===//
//
// The one place target names are resolved: `host`, an x86-64 level (HostTargets.h), or
// `<chip>:<engine>` with a chip profile (ChipRegistry.h) and engine cpu (the aarch64
// application cores) or hvx (the Hexagon DSP's vector units). The aarch64 and Hexagon back
// ends plug in at findCodegenTarget.
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
  std::string engine;                // "cpu" or "hvx"
};

// false + one-line error for an unknown name, a chip without an engine, or an engine the
// chip lacks (Dimensity 9300 has no Hexagon DSP).
bool resolveTarget(const std::string &name, TargetChoice &out, std::string &error);

// The target kiln compile generates code for. Chip engines are refused with one line
// until their back end exists (issue 7).
const CpuTarget *findCodegenTarget(const std::string &name, std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_TARGETRESOLVER_H
