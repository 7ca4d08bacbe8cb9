//===- MemoryPlan.h - the totals kiln-plan-memory leaves on the module ----===//
#ifndef KILN_PASSES_MEMORY_MEMORYPLAN_H
#define KILN_PASSES_MEMORY_MEMORYPLAN_H

#include <cstdint>

#include "mlir/IR/BuiltinOps.h"

#include "dialects/kiln/IR/KvFormat.h"

namespace kiln::memory {

struct MemoryPlan {
  uint32_t maxCtx = 0, maxBatch = 0;
  KvFormat kv;
  uint64_t scratchBytes = 0, scratchBytesWithoutReuse = 0;
  uint64_t kvBytes = 0, kvBytesPerToken = 0;
};

// As the module attribute kiln.memory_plan (a dictionary of integers).
void writeMemoryPlan(mlir::ModuleOp module, const MemoryPlan &plan);
// The module's plan; failure (with an error at the module) when it has none or a broken one.
mlir::FailureOr<MemoryPlan> readMemoryPlan(mlir::ModuleOp module);

} // namespace kiln::memory

#endif // KILN_PASSES_MEMORY_MEMORYPLAN_H
