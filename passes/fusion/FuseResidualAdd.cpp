//===- FuseResidualAdd.cpp - add(r, linear(x)) becomes one op -------------===//
//
// The residual is added as the linear stores its output (kernel epilogue), so the
// projection's output never makes a round trip through memory before the add; the code
// generator also writes the sum into r's buffer when nothing reads r afterwards.
//===----------------------------------------------------------------------===//
#include "passes/fusion/LinearFusionPasses.h"

#include "mlir/IR/Builders.h"

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"

#define DEBUG_TYPE "kiln-fuse-residual-add"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSERESIDUALADD
#include "passes/fusion/LinearFusionPasses.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct FuseResidualAdd : public impl::KilnFuseResidualAddBase<FuseResidualAdd> {
  using KilnFuseResidualAddBase::KilnFuseResidualAddBase;

  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp a) { adds.push_back(a); });
    Builder b(&getContext());
    for (AddOp a : adds) {
      // add is commutative (and exactly so in floating point): the linear may be either side.
      for (unsigned k = 0; k < 2; ++k) {
        Value proj = a->getOperand(k), residual = a->getOperand(1 - k);
        auto l = proj.getDefiningOp<LinearOp>();
        // A bias is added after the product: fusing would add it after the residual.
        if (!l || l.getBias() || !proj.hasOneUse())
          continue;
        OpBuilder ob(a);
        auto fused = ob.create<FusedLinearOp>(
            a.getLoc(), TypeRange{a.getType()}, ValueRange{l.getInput(), residual},
            ArrayRef<NamedAttribute>{b.getNamedAttr("weight", l.getWeightAttr()),
                                     b.getNamedAttr("format", l.getFormatAttr())});
        if (auto layer = a->getAttr(attr::kLayer))
          fused->setAttr(attr::kLayer, layer);
        a.replaceAllUsesWith(fused.getResults()[0]);
        a.erase();
        l.erase();
        ++numFused;
        break;
      }
    }
  }
};

} // namespace
} // namespace kiln
