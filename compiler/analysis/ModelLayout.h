//===- ModelLayout.h - where the layers and heads of a kiln module are -----===//
//
// Importance measurements intervene on weights, not on the IR: a layer is removed by
// zeroing the projections that write its residual branches (attn_output and ffn_down for
// a Llama block), a query head by zeroing its columns of the attention output projection.
// This header finds those weights from the IR (ops tagged kiln.layer), so it also works on
// modules a pass already changed (pruned layers, uneven head groups, derived weights), and
// builds overlay weight stores with the changes applied.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_ANALYSIS_MODELLAYOUT_H
#define KILN_COMPILER_ANALYSIS_MODELLAYOUT_H

#include <cstdint>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "compiler/analysis/Importance.h"
#include "models/weights/WeightStore.h"

namespace kiln::analysis {

// One residual add of a layer: stream + branch, the branch written by a projection.
struct ResidualBranch {
  uint32_t addOp = 0;    // index of the kiln.add in @forward's body
  uint32_t branchOp = 0; // index of the kiln.linear producing the branch
  std::string weight;    // that linear's weight
};

struct LayerLayout {
  int32_t layer = 0;
  uint32_t inputOp = 0;  // index of the op producing the hidden state entering the layer
  uint32_t outputOp = 0; // index of the op producing the hidden state leaving it
  std::vector<ResidualBranch> branches;
  // Attention (absent when attentionOp < 0).
  int64_t attentionOp = -1;
  int32_t heads = 0, kvHeads = 0, headDim = 0;
  std::vector<int32_t> kvHeadOf; // query head -> KV head
  std::string attnOutWeight;     // projection reading the heads: its columns h*d..(h+1)*d-1
};

// Op indices count every op of @forward's body from 0 (RefExecutor's ObservedOp::index).
// Fails with one line when the module has no @forward or a layer is not a residual block.
bool findLayers(mlir::ModuleOp module, std::vector<LayerLayout> &layers, std::string &error);

// A store that resolves every name of `base` to the same bytes (views, no copies: `base`
// must outlive it) plus fp32 replacements for the weights changed below.
WeightStore overlayOf(const WeightStore &base);
// Multiplies every residual-branch projection of `layer` in `overlay` by `gain` (0 removes
// the layer). Changes compose: each reads the weight as `overlay` resolves it now.
bool scaleBranches(WeightStore &overlay, const LayerLayout &layer, double gain, std::string &error);
// Zeroes the output-projection columns of query head `head` in `overlay`.
bool zeroHead(WeightStore &overlay, const LayerLayout &layer, int32_t head, std::string &error);

// Mean NLL over the scored positions of `calib` (perplexity = exp of it).
bool calibrationNll(mlir::ModuleOp module, const WeightStore &store, const CalibrationSet &calib,
                    double &meanNll, std::string &error);

} // namespace kiln::analysis

#endif // KILN_COMPILER_ANALYSIS_MODELLAYOUT_H
