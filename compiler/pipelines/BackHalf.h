//===- BackHalf.h - the pipeline from planned kiln IR to the back end's code -===//
//
// After the kiln-level passes (CompilePipeline.h: slimming, precision, fusion), the back
// half runs in this order (Pipeline.h runs both), every pass of it runnable from kiln-opt:
//   kiln-assign-layout        weight rows as the target's kernels read them
//   kiln-size-prefill-panels  prefill token panels sized to the target's L2
//   kiln-size-weight-shards   decode weight shards for targets that prefetch themselves
//   kiln-plan-memory          scratch, workspace and KV-cache offsets
//   <target lowering>         TargetBackend::addLoweringPasses (CPU: kiln-lower-to-ukernels,
//                             kiln-convert-ukernel-calls)
// then TargetBackend::emitCode. `kiln compile --emit=kiln` stops after kiln-plan-memory,
// `--emit=lowered` after the lowering.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_PIPELINES_BACKHALF_H
#define KILN_COMPILER_PIPELINES_BACKHALF_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "codegen/common/TargetBackend.h"
#include "compiler/pipelines/CompilePipeline.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace kiln::pipelines {

struct BackHalfOptions {
  std::string layout = "packed";  // packed (the target's row groups) | r16 | r32 | rows64 | none
  std::optional<unsigned> l2Kib;  // prefill panels' cache; unset: the target's (0: off)
  uint32_t maxCtx = 0, maxBatch = 0;
  std::string kv = "f32";         // KV cache element types (kiln-plan-memory's kv)
};

enum class BackHalfStage { Kiln, Lowered };

// Adds the back half's passes to pm in order, up to and including `stopAfter`.
void buildBackHalfPipeline(mlir::OpPassManager &pm, const codegen::TargetBackend &target,
                           const BackHalfOptions &opts, codegen::LoweringWeights &weights,
                           BackHalfStage stopAfter);

// Runs it on module; each pass that ran is recorded with its parameters and what it did
// (counted as it finishes) for the artifact's provenance. One-line error on failure.
bool runBackHalfPipeline(mlir::ModuleOp module, const codegen::TargetBackend &target,
                         const BackHalfOptions &opts, codegen::LoweringWeights &weights,
                         BackHalfStage stopAfter, std::vector<AppliedPass> &applied,
                         std::string &error);

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_BACKHALF_H
