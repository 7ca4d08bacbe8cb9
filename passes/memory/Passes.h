//===- Passes.h - memory planning passes ----------------------------------===//
#ifndef KILN_PASSES_MEMORY_PASSES_H
#define KILN_PASSES_MEMORY_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/memory/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/memory/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_MEMORY_PASSES_H
