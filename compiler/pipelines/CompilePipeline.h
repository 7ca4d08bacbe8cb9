//===- CompilePipeline.h - the kiln-level passes, run by Pipeline.h --------===//
#ifndef KILN_COMPILER_PIPELINES_COMPILEPIPELINE_H
#define KILN_COMPILER_PIPELINES_COMPILEPIPELINE_H

#include <cstdint>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

namespace mlir {
class PassManager;
} // namespace mlir

namespace kiln::pipelines {

// The kiln-level pipeline's options (slimming, precision, fusion), every request resolved to
// an explicit decision; the back half has its own (BackHalf.h).
struct KilnPipelineOptions {
  // f32 | f16 | q8_0 | q6_K | q5_K | q4_K | q4_0 | q4_1 | q3_0, or "source": each weight in
  // its source format (kiln-assign-source-format), K-quants requantised unless
  // keepPackedKQuants; "lossless": the same with every K-quant kept
  std::string weightFormat = "f32";
  bool keepPackedKQuants = false; // the codegen reads q4_K/q5_K/q6_K with integer-dot kernels
  // Precision (passes/precision): rules replace the uniform format; a map is applied on
  // top (both as the passes' option strings). Resolved by PrecisionSearch.h.
  std::string precisionRules;       // kiln-assign-rules-format; empty: uniform
  std::string precisionMap;         // kiln-apply-precision-map; empty: not run
  // Slimming (passes/slimming), as explicit decisions: measured requests ("auto",
  // "N/layer") are resolved into these first (SlimmingSearch.h).
  uint32_t maxCtx = 0;              // kiln-prune-context; 0: not run
  std::vector<int32_t> pruneLayers; // kiln-prune-layers; empty: not run
  std::string pruneHeads;           // kiln-prune-heads "layer:h,h;layer:h"; empty: not run
  bool quiet = false;               // keep the passes' remarks off stderr (searches)
  std::string fusion = "all";       // passes/fusion: all | none | auto | comma list (parseFusion)
  std::string layout = "none";      // the layout codegen will use: what --fusion auto reads
};

// The linear fusions to run (kiln compile --fusion): "all", "none", "auto" or a comma list
// of qkv, swiglu, norm, residual, rope. One-line error for anything else. "auto" parses as
// RoPE only; resolveFusion decides it on the module after precision.
struct FusionSet {
  bool norm = false, swiglu = false, qkv = false, residual = false, rope = false;
};
bool parseFusion(const std::string &spec, FusionSet &out, std::string &error);

// opts.fusion, with "auto" resolved for the module as precision left it: every linear
// fusion ("qkv,swiglu,residual,rope") when all its linears will run on the r16 integer
// kernels (layout r16, every linear q4_0/q4_1/q8_0) and hold at least 2^24 weights (decode
// streams them from memory), else "rope".
std::string resolveFusion(mlir::ModuleOp module, const KilnPipelineOptions &opts);

// A pass that ran, for the artifact's provenance.
struct AppliedPass {
  std::string name, params, effects;
};

// The slimming passes alone, in pipeline order: context, layers, heads. The searches
// run them on copies of the module to measure a candidate.
bool runSlimmingPasses(mlir::ModuleOp module, const KilnPipelineOptions &opts,
                       std::vector<AppliedPass> &applied, std::string &error);

// kiln-rotate-residual (before precision, so the rotated weights are what it rounds);
// records how many weights now read or write the rotated stream.
bool runResidualRotation(mlir::ModuleOp module, std::vector<AppliedPass> &applied,
                         std::string &error);

// The precision passes alone: uniform (or rules), then the map when one is given.
bool runPrecisionPasses(mlir::ModuleOp module, const KilnPipelineOptions &opts,
                        std::vector<AppliedPass> &applied, std::string &error);

// The fusions opts asks for (after precision: fused ops keep the assigned formats).
bool runFusionPasses(mlir::ModuleOp module, const KilnPipelineOptions &opts,
                     std::vector<AppliedPass> &applied, std::string &error);

// Runs `pm` on module: errors become one line in `error`, remarks and warnings go to
// stderr unless quiet.
bool runPassManager(mlir::PassManager &pm, mlir::ModuleOp module, bool quiet,
                    std::string &error);

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_COMPILEPIPELINE_H
