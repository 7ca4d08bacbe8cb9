//===- KernelCost.h - llvm-mca's cost of the NEON kernels per Arm core ----===//
//
// Static estimates, made at build time (KernelCostTable.cmake), so kernel variants and chips
// can be compared without the hardware: llvm-mca's instructions and cycles for one
// 32-element block of 16 rows x T tokens of the NEON r16 kernel
// (codegen/cpu/ukernels/neon/linear_packed.c), for each core a chip profile names. With the
// artifact's matrices this gives the cycles a decode step spends in those kernels, and so
// the speed one core could reach if memory were free: `kiln inspect A.kiln --chip NAME`.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_KERNELCOST_H
#define KILN_CODEGEN_TARGETS_KERNELCOST_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct ChipProfile;

struct KernelCost {
  const char *cpu;     // LLVM CPU whose scheduling model timed it (a profile's llvm_cpu)
  uint32_t format;     // KILN_TYPE_Q4_0_R16, ...
  int tokens;          // T: 1 (decode) or 2 (the prefill tile)
  double instructions; // per block
  double cycles;       // per block, llvm-mca's steady state
  const char *noModel; // non-empty: llvm-mca could not time the loop on this model
};

// The table rows for one CPU (empty when no profile names it).
std::vector<KernelCost> kernelCostsFor(const std::string &cpu);

// A matrix an artifact's decode step multiplies with a packed kernel.
struct PackedMatrix {
  uint32_t format;
  uint64_t rows, in;
};

// The lines `kiln inspect --chip` prints: per format used, the block cost on the profile's
// prime core, and the decode step's cycles in those kernels with the tokens/s one core at
// its top clock would reach if memory were free. Empty for a profile without a cpu engine.
std::string formatKernelCosts(const ChipProfile &chip, const std::vector<PackedMatrix> &mats);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_KERNELCOST_H
