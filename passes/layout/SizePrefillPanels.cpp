//===- SizePrefillPanels.cpp - prefill token panels sized to the core's cache -===//
//
// A prefill linear streams the quantised activations of every token once per 16-row group
// (the kernels keep a group's weights in L1 and loop over token tiles), so activation
// traffic is about rows/16 times the panel's bytes. While the panel fits in the core's L2
// that traffic stays on chip; a longer prompt would stream it from the next level on every
// group. The lowering then splits the call into panels of kiln.token_panel tokens: the
// weights are read once per panel instead, and each token's results are unchanged
// (activations are quantised per token).
//===----------------------------------------------------------------------===//
#include "passes/layout/Passes.h"

#include <algorithm>

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "kiln/quant_packed.h"

#define DEBUG_TYPE "kiln-size-prefill-panels"

namespace kiln {
#define GEN_PASS_DEF_KILNSIZEPREFILLPANELS
#include "passes/layout/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// Token tiles of the prefill kernels are at most 8 wide: whole tiles per panel.
constexpr int64_t kTokenTile = 8;

// Bytes of one token's activations as the op's kernel reads them: int8 codes and block
// scales for the packed (r16, r32) kernels, fp32 rows for the others.
int64_t activationBytes(Operation *op, int64_t in) {
  if (readsRowGroups(op))
    return int64_t(kiln_packed_act_stride(uint64_t(in)));
  return 4 * in;
}

struct SizePrefillPanels : public impl::KilnSizePrefillPanelsBase<SizePrefillPanels> {
  using KilnSizePrefillPanelsBase::KilnSizePrefillPanelsBase;

  void runOnOperation() override {
    if (cacheKib < 16 || cacheKib > (1u << 20)) {
      getOperation().emitError() << "kiln-size-prefill-panels: cache-kib " << uint64_t(cacheKib)
                                 << " is outside 16..1048576";
      return signalPassFailure();
    }
    // Half the cache: the rest holds the group's weights on their way, the outputs and
    // whatever else the core runs.
    const int64_t budget = int64_t(cacheKib) * 1024 / 2;
    getOperation().walk([&](Operation *op) {
      if (!isa<LinearOp, LogitsOp, FusedLinearOp>(op))
        return;
      auto inTy = cast<RankedTensorType>(op->getOperand(0).getType());
      const int64_t panel = std::max(kTokenTile, budget / activationBytes(op, inTy.getDimSize(1)) /
                                                     kTokenTile * kTokenTile);
      if (maxBatch && panel >= int64_t(maxBatch)) // every call fits in one panel
        return;
      op->setAttr(attr::kTokenPanel,
                  IntegerAttr::get(IntegerType::get(&getContext(), 64), panel));
      ++numPanelled;
    });
  }
};

} // namespace
} // namespace kiln
