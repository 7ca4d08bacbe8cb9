//===- ChipTargets.h - code generation targets built from chip profiles ---===//
//
// A chip profile's `cpu` engine (aarch64 application cores) becomes a CpuTarget: the
// aarch64 triple, the micro-kernel bitcode variant its ISA features allow (dotprod is
// kiln's floor, i8mm adds smmla), the features the runtime checks before loading the
// code, and the profile's prime core as the scheduling model. Its `hvx` engine (a Hexagon
// DSP) becomes a Hexagon target: the profile's LLVM cpu, 128-byte HVX, and the HVX kernels.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_CHIPTARGETS_H
#define KILN_CODEGEN_TARGETS_CHIPTARGETS_H

#include <string>

#include "codegen/targets/ChipProfile.h"
#include "codegen/targets/HostTargets.h"

namespace kiln::codegen {

// The target for `<profile>:cpu`; nullptr + one-line error when the profile has no cpu
// engine or lacks dotprod. The result lives as long as the program.
const CpuTarget *chipCpuTarget(const ChipProfile &profile, std::string &error);

// The runtime governor's SPEC defaults for the chip's cores (kiln/governor.h): skip=<prime
// cores> where the profile has a prime cluster beside others, so capped decode leaves the
// prime cores (docs/runtime-api.md, "Placement"); "" otherwise.
std::string governorDefaults(const ChipProfile &profile);

// The target for `<profile>:hvx`; nullptr + one-line error when the profile has no Hexagon
// engine, or one kiln has no kernels for (HVX other than 128 bytes, an LLVM cpu other than
// hexagonv67/v73).
const CpuTarget *chipHvxTarget(const ChipProfile &profile, std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_CHIPTARGETS_H
