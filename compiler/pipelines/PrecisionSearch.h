//===- PrecisionSearch.h - storage formats chosen from measured sensitivity -===//
//
// Turns `--precision` into the options of the precision passes (KilnPipelineOptions):
//   source               each weight as the model file stores it where kiln can, else
//                        requantised to more bits (kiln-assign-source-format); K-quants
//                        go to q4_1/q8_0, whose kernels are integer-dot
//   lossless             the same, K-quants kept
//   uniform:FMT          one format for every matrix (kiln-assign-uniform-format)
//   rules:CLASS=FMT,...  per tensor class (kiln-assign-rules-format)
//   auto                 measured on the calibration text with the reference executor,
//                        under --bpw B or --max-weight-bytes N:
//     1. reference: the module with every weight f32; its log-probabilities on the scored
//        calibration positions (llama.cpp's chunking) are kept;
//     2. sensitivity: for each weight (a tied table once) and each format it may take
//        (f16, q8_0, q4_1, q4_0, q3_0, and q6_K/q5_K/q4_K where the rows fill their
//        256-element blocks; f16 for norm scales), the mean KL(P_f32 || P) with only
//        that weight stored in that format (rounded as --rounding asks: prepare);
//     3. choice: one format per weight minimising the summed KLDs with the bytes as the
//        weight layout stores them (rows padded to whole blocks) within the budget
//        (PrecisionKnapsack.h, exact dynamic programming);
//     4. the chosen map's real KLD on the calibration text, next to the predicted sum.
//   The result is a kiln-apply-precision-map pass. Every measurement and the decision go
//   into `records` (the artifact's provenance).
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_PIPELINES_PRECISIONSEARCH_H
#define KILN_COMPILER_PIPELINES_PRECISIONSEARCH_H

#include <functional>
#include <string>
#include <vector>

#include "compiler/pipelines/CompilePipeline.h"
#include "compiler/pipelines/SlimmingSearch.h"
#include "models/weights/WeightStore.h"

namespace kiln::pipelines {

struct PrecisionRequest {
  std::string spec;           // source | uniform:FMT | rules:... | auto
  std::string bpw;            // --bpw as given; "" when not
  std::string maxWeightBytes; // --max-weight-bytes as given; "" when not
  const Calibration *calib = nullptr;
  std::function<void(const std::string &)> log; // progress lines; may be empty
  // How kiln compile's layout will store linear weights, so the budget counts the bytes it
  // writes (precision::storedBytes): rows per packed group (0: rows64) and row alignment.
  uint32_t packRows = 16;
  uint64_t rowAlign = 64;
  // --rounding other than nearest: called before a weight is measured in a format, so the
  // measurement sees the weight as it will be rounded (CalibratedRounding.h)
  std::string rounding = "nearest";
  std::function<bool(const std::string &weight, uint32_t format, std::string &error)> prepare;
};

// Checks the request (one-line error for a bad one) and fills the precision fields of
// `out`; auto measures `module` (slimmed, derived weights materialised; left unchanged).
bool resolvePrecision(mlir::ModuleOp module, const WeightStore &store,
                      const PrecisionRequest &req, KilnPipelineOptions &out,
                      std::vector<AppliedPass> &records, std::string &error);

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_PRECISIONSEARCH_H
