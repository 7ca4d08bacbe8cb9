//===- LinearFusionPasses.h - fusions around kiln.linear ------------------===//
#ifndef KILN_PASSES_FUSION_LINEARFUSIONPASSES_H
#define KILN_PASSES_FUSION_LINEARFUSIONPASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/fusion/LinearFusionPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/fusion/LinearFusionPasses.h.inc"

} // namespace kiln

#endif // KILN_PASSES_FUSION_LINEARFUSIONPASSES_H
