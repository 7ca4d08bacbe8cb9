//===- FuseRopeIntoAttention.cpp - kiln.rope on q/k -> attention attrs -----===//
#include "passes/fusion/Passes.h"

#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "dialects/kiln/IR/KilnOps.h"
#include "passes/slimming/SlimmingUtils.h"

#define DEBUG_TYPE "kiln-fuse-rope-into-attention"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEROPEINTOATTENTION
#include "passes/fusion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// The rope defining `operand`, if the attention may absorb it: its only use is this
// operand (the rotated value is not needed anywhere else) and it rotates per the
// attention's heads at the attention's positions.
RopeOp absorbable(AttentionOp a, Value operand) {
  auto r = operand.getDefiningOp<RopeOp>();
  if (!r || !r.getResult().hasOneUse() || r.getPositions() != a.getPositions() ||
      r.getHeadDim() != a.getHeadDim())
    return nullptr;
  return r;
}

struct FuseRopeIntoAttention
    : public impl::KilnFuseRopeIntoAttentionBase<FuseRopeIntoAttention> {
  void runOnOperation() override {
    int64_t fused = 0, skipped = 0;
    getOperation().walk([&](AttentionOp a) {
      if (a.getRopeRotaryDimsAttr())
        return; // already fused
      RopeOp q = absorbable(a, a.getQ()), k = absorbable(a, a.getK());
      // Both or neither: the kernel rotates q and k with one set of parameters.
      if (!q || !k || q == k || q.getRotaryDims() != k.getRotaryDims() ||
          q.getTheta() != k.getTheta() || q.getStyle() != k.getStyle() ||
          q.getFreqFactorsAttr() != k.getFreqFactorsAttr()) {
        if (a.getQ().getDefiningOp<RopeOp>() || a.getK().getDefiningOp<RopeOp>())
          ++skipped;
        return;
      }
      MLIRContext *ctx = a.getContext();
      a.setRopeRotaryDimsAttr(IntegerAttr::get(IntegerType::get(ctx, 32), q.getRotaryDims()));
      a.setRopeThetaAttr(q.getThetaAttr());
      a.setRopeStyleAttr(q.getStyleAttr());
      a.setRopeFreqFactorsAttr(q.getFreqFactorsAttr());
      a.getQMutable().assign(q.getInput());
      a.getKMutable().assign(k.getInput());
      q.erase();
      k.erase();
      ++fused;
    });
    numFused += fused;
    slimming::recordPassEffects(getOperation(), "kiln-fuse-rope-into-attention",
                                "fused=" + std::to_string(fused) +
                                    ",skipped=" + std::to_string(skipped));
  }
};

} // namespace
} // namespace kiln
