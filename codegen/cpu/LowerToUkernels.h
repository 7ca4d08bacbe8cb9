//===- LowerToUkernels.h - kiln IR -> LLVM dialect calls of micro-kernels -===//
//
// Turns @forward into `i32 kiln_model_forward(ctx, tokens, positions, n, logits)` (the
// ABI of kiln/abi.h) in MLIR's LLVM dialect: every kiln op becomes one call of a
// micro-kernel (codegen/common/ukernel_abi.h) whose shapes, weight offsets, scratch
// offsets and KV-cache offsets are compile-time constants. Decides the weight layout
// and the memory plan on the way, since both fix those constants.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_LOWERTOUKERNELS_H
#define KILN_CODEGEN_CPU_LOWERTOUKERNELS_H

#include <cstdint>
#include <functional>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "codegen/common/WeightLayout.h"
#include "compiler/eval/KvFormat.h"
#include "compiler/weights/WeightStore.h"

namespace kiln::codegen {

struct LoweringOptions {
  uint32_t maxCtx = 0;   // positions the KV cache and RoPE tables hold
  uint32_t maxBatch = 0; // tokens per forward call
  KvFormat kv;           // KV cache element types (--kv)
  // Builds a weight the store does not hold yet (kiln compile's derived weights, made one
  // at a time so the fp32 stacked weights never exist all at once); `release` drops it
  // again once the layout has packed it. Unset: every weight must be in the store.
  std::function<bool(const std::string &name, std::string &error)> materialize;
  std::function<void(const std::string &name)> release;
};

struct LoweredModel {
  mlir::OwningOpRef<mlir::ModuleOp> module; // LLVM dialect
  WeightLayout weights;
  uint64_t scratchBytes = 0, scratchBytesWithoutReuse = 0;
  uint64_t kvBytes = 0, kvBytesPerToken = 0;
  uint64_t weightBytesPerToken = 0;
  uint32_t vocab = 0;
};

bool lowerToUkernels(mlir::ModuleOp kilnModule, const WeightStore &store,
                     const LoweringOptions &opts, LoweredModel &out, std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_LOWERTOUKERNELS_H
