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

class RmsNormOp;
// rms_norm(x, g) W^T = rms_normalize(x) (W diag(g))^T: each reader's weight W becomes the
// derived "W.fold(g)" (scale_cols) and the norm kiln.rms_normalize, which is returned.
// The caller has checked that every reader is a linear or the classifier.
// kiln-fold-norm-into-linear and kiln-rotate-residual fold with it.
mlir::Value foldNormIntoReaders(mlir::ModuleOp module, RmsNormOp norm);

} // namespace kiln

#endif // KILN_PASSES_FUSION_LINEARFUSIONPASSES_H
