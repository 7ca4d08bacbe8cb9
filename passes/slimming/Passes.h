//===- Passes.h - slimming passes: context, layer and head pruning ---------===//
#ifndef KILN_PASSES_SLIMMING_PASSES_H
#define KILN_PASSES_SLIMMING_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/slimming/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/slimming/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_SLIMMING_PASSES_H
