//===- SlimmingSearch.h - slimming decisions measured on calibration text -===//
//
// Turns what the user asked for (`--prune-layers auto|L1,L2`, `--prune-heads
// auto|N/layer|SPEC`, `--max-ppl-increase P`, `--max-ctx N`) into the explicit options of
// the slimming passes (KilnPipelineOptions), measuring candidates with the fp32 reference
// executor on the user's calibration tokens:
//   - layers auto: greedy best-first. Each round removes, on a copy of the module, each
//     remaining layer in turn, measures the calibration PPL, and keeps the removal with the
//     lowest PPL if it stays within (1 + P/100) x the unpruned model's PPL; otherwise it stops.
//   - heads N/layer: the N heads of each layer with the lowest ablation KLD (ties: lowest
//     attention entropy), from compiler/analysis/Importance.h.
//   - heads auto: heads in that ranking order (all layers pooled), each removed on top of
//     the heads already removed while the measured PPL stays within the budget; the first
//     head that would exceed it ends the search. A layer always keeps one head (a head that
//     would be its last is passed over).
// The budget is relative to the unpruned model for both searches (layers run first).
// Every measurement, score and decision is appended to `records` for the provenance.
//
// Compensation (`--compensate on|off|auto`, default auto): the removed parts' mean output
// on the scored calibration positions (same chunks as the PPL) of the UNPRUNED model
// becomes a bias, closed form, no training:
//   - removed query heads H of layer l: bias of l's attention output projection
//     += W_o[:, columns of H] . mean_t(attention output of H);
//   - removed layer l: bias of the last residual-branch projection (ffn_down) of the
//     nearest kept layer below l += mean_t(attention branch + FFN branch of l); layer 0
//     has no earlier projection and gets no compensation.
// An existing bias is added to (under a new derived name). auto measures the calibration
// PPL with and without and keeps the better; on and auto record both in the provenance.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_PIPELINES_SLIMMINGSEARCH_H
#define KILN_COMPILER_PIPELINES_SLIMMINGSEARCH_H

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "compiler/pipelines/CompilePipeline.h"
#include "models/weights/WeightStore.h"

namespace kiln::pipelines {

struct Calibration {
  std::string name;            // the text's file name, for the records
  std::vector<int32_t> tokens; // the whole text, tokenised with BOS
  int32_t bos = 1;
  uint32_t ctx = 256;   // chunk length (perplexity method)
  size_t maxChunks = 0; // 0: every chunk
};

struct SlimmingRequest {
  uint32_t maxCtx = 0; // 0: no context cap
  std::string layers;  // "" | "auto" | "1,3"
  std::string heads;   // "" | "auto" | "N/layer" | "0:1,5;3:2"
  double maxPplIncrease = std::numeric_limits<double>::quiet_NaN(); // percent; NaN: not given
  const Calibration *calib = nullptr;
  std::string compensate = "auto"; // on | off | auto
  // Progress lines (stderr in the driver); may be empty.
  std::function<void(const std::string &)> log;
};

// Parameters and fp32 KV bytes per token of the projections, norms and attention ops of
// @forward (the embedding table excluded), for before/after reports.
struct Footprint {
  uint64_t params = 0, kvBytesPerToken = 0;
};
Footprint footprintOf(mlir::ModuleOp module);

// Mean outputs of the unpruned model on the scored calibration positions, for compensation.
struct CompensationStats {
  bool measured = false;
  size_t positions = 0;
  std::map<int32_t, std::vector<double>> attention; // layer -> mean attention result
  std::map<int32_t, int32_t> headDim;
  std::map<int32_t, std::string> attnOutWeight;     // the unpruned output projection
  std::map<int32_t, std::vector<double>> branches;  // layer -> mean sum of its branches
};

struct SlimmingPlan {
  double basePpl = std::numeric_limits<double>::quiet_NaN(); // unpruned, when calibrated
  Footprint before;                                          // of the unpruned module
  CompensationStats compensation;
};

// Checks the request (one-line error for a bad one) and fills the slimming fields of
// `out`. `module` is left as it is; `store` gains derived weights of the candidates it
// measured (materialise the final module's recipes again afterwards).
bool resolveSlimming(mlir::ModuleOp module, WeightStore &store, const SlimmingRequest &req,
                     KilnPipelineOptions &out, SlimmingPlan &plan, std::vector<AppliedPass> &records,
                     std::string &error);

// After the slimming passes ran on `slimmed` (derived weights materialised): adds the
// compensation biases per `req.compensate` and records the decision. Does nothing when
// nothing was pruned or compensation is off.
bool compensateSlimming(mlir::ModuleOp slimmed, WeightStore &store, const SlimmingRequest &req,
                        const KilnPipelineOptions &applied, const SlimmingPlan &plan,
                        std::vector<AppliedPass> &records, std::string &error);

// After the slimming passes ran on `slimmed`: measures it (calibration PPL when the
// request has a calibration text; its derived weights are materialised into `store`) and
// records before/after. Does nothing when nothing was pruned.
bool recordSlimmingResult(mlir::ModuleOp slimmed, WeightStore &store, const SlimmingRequest &req,
                          const SlimmingPlan &plan, std::vector<AppliedPass> &records,
                          std::string &error);

// Calibration perplexity of `module` as it is; its derived weights are materialised into
// `store` first.
bool calibrationPpl(mlir::ModuleOp module, WeightStore &store, const Calibration &calib,
                    double &ppl, std::string &error);

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_SLIMMINGSEARCH_H
