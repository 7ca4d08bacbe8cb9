//===- LowerToUkernels.h - the CPU back end's lowering pass ---------------===//
//
// kiln-lower-to-ukernels (codegen/cpu/Passes.td), made with the weights it stores
// (LoweringWeights.h) or, from kiln-opt, without them; then kiln-convert-ukernel-calls.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_LOWERTOUKERNELS_H
#define KILN_CODEGEN_CPU_LOWERTOUKERNELS_H

#include <memory>

#include "mlir/Pass/Pass.h"

#include "codegen/common/LoweringWeights.h"

namespace kiln::codegen {

std::unique_ptr<mlir::Pass> createKilnLowerToUkernels(LoweringWeights &weights);

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "codegen/cpu/Passes.h.inc"

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_LOWERTOUKERNELS_H
