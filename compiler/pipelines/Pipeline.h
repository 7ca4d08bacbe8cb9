//===- Pipeline.h - the whole order, from the imported module to lowered code -===//
//
// kiln compile, eval and ppl run one order on an imported module, written only here:
//   slimming    measured requests resolved first (SlimmingSearch.h), then kiln-prune-context,
//               kiln-prune-layers, kiln-prune-heads; compensation measured on the result
//   rotation    --rotate residual: kiln-rotate-residual folds a Hadamard rotation of the
//               residual stream into the weights, before anything rounds them; auto: the
//               precision below runs on a rotated copy and on the module, the better kept
//   precision   the spec resolved (PrecisionSearch.h: auto measures its candidates), the
//               precision passes, then --rounding weighted|gptq encodes every weight from
//               the calibration inputs (CalibratedRounding.h)
//   fusion      norm folding, SwiGLU, QKV, residual add, RoPE into attention
//   back half   layout, prefill panels, weight shards, memory plan, the target's lowering
//               (BackHalf.h)
// Stage cuts it: eval and ppl stop after fusion, kiln compile after the memory plan
// (--emit=kiln) or the lowering. The CLI parses flags, reads the calibration text, runs
// this and writes what it asked for.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_PIPELINES_PIPELINE_H
#define KILN_COMPILER_PIPELINES_PIPELINE_H

#include <functional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "compiler/pipelines/BackHalf.h"
#include "compiler/pipelines/PrecisionSearch.h"
#include "compiler/pipelines/SlimmingSearch.h"
#include "models/weights/CalibratedQuant.h"

namespace kiln::pipelines {

enum class Stage { Fused, Kiln, Lowered };

// --rotate: none, residual, or auto (the precision run both ways, the lower calibration
// KLD against the f32 model kept).
enum class Rotate { None, Residual, Auto };

struct PipelineRequest {
  SlimmingRequest slimming;            // its calib: only when pruning is measured
  PrecisionRequest precision;          // spec empty: no precision pass, weights as imported
  quant::Rounding rounding = quant::Rounding::Nearest; // needs calib and a precision spec
  Rotate rotate = Rotate::None;        // kiln-rotate-residual before precision; auto: needs calib
  const Calibration *calib = nullptr;  // the calibration text, where anything measures
  std::string fusion = "none";         // parseFusion's spec
  std::string layout = "none";         // the codegen's layout (what --fusion auto reads)
  unsigned rowAlign = 64;              // the target's plain-row alignment
  // The codegen reads q4_K/q5_K/q6_K with integer-dot kernels, so `source` keeps them.
  bool integerKQuants = true;
  // The back half (Stage::Kiln and after).
  const codegen::TargetBackend *target = nullptr;
  BackHalfOptions back;   // maxCtx: the context asked for (a kiln.max_ctx cap wins);
                          // maxBatch: 0 = min(128, context)
  codegen::LoweringWeights *weights = nullptr; // filled by the lowering
  // Called as the kiln-level passes and the back half begin (kiln compile's progress).
  std::function<void(const std::string &)> stageBegins;
};

// Runs the order above on module up to and including `stopAfter`. `records` gets every
// pass, measurement and decision for the provenance; progress goes to req.slimming.log.
// Stage::Fused leaves every derived weight materialised in `store`; the back half builds
// each when it packs it, so the fp32 stacked weights never exist all at once. One-line
// error on failure.
bool runPipeline(mlir::ModuleOp module, WeightStore &store, PipelineRequest &req,
                 Stage stopAfter, std::vector<AppliedPass> &records, std::string &error);

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_PIPELINE_H
