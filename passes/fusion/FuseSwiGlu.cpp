//===- FuseSwiGlu.cpp - gate/up linears + silu + mul become one op --------===//
//
// mul(silu(x Wg^T), x Wu^T) as one kiln.fused_linear ... swiglu over the weight whose
// rows interleave gate and up: one pass over x, and the kernel's store step writes
// silu(gate) * up, so the gate and up activations never reach memory.
//===----------------------------------------------------------------------===//
#include "passes/fusion/LinearFusionPasses.h"

#include "mlir/IR/Builders.h"

#include "models/weights/DerivedWeights.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"

#define DEBUG_TYPE "kiln-fuse-swiglu"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSESWIGLU
#include "passes/fusion/LinearFusionPasses.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// A linear with no bias whose only reader is `user`.
LinearOp soleLinear(Value v, Operation *user) {
  auto l = v.getDefiningOp<LinearOp>();
  if (!l || l.getBias() || !v.hasOneUse() || *v.getUsers().begin() != user)
    return nullptr;
  return l;
}

struct FuseSwiGlu : public impl::KilnFuseSwiGluBase<FuseSwiGlu> {
  using KilnFuseSwiGluBase::KilnFuseSwiGluBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<MulOp> muls;
    module.walk([&](MulOp m) { muls.push_back(m); });
    Builder b(&getContext());
    for (MulOp m : muls) {
      // mul is commutative: the silu may be either operand.
      for (unsigned s = 0; s < 2; ++s) {
        auto silu = m->getOperand(s).getDefiningOp<SiluOp>();
        if (!silu || !silu.getResult().hasOneUse())
          continue;
        LinearOp gate = soleLinear(silu.getInput(), silu);
        LinearOp up = soleLinear(m->getOperand(1 - s), m);
        if (!gate || !up || gate.getInput() != up.getInput() ||
            gate.getFormat() != up.getFormat())
          continue;
        const std::string name =
            "interleaved_rows(" + gate.getWeight().str() + "," + up.getWeight().str() + ")";
        addDerivedWeight(
            module, name,
            derivedRecipe(&getContext(), DeriveOp::interleave_rows,
                          {b.getNamedAttr("sources", b.getArrayAttr({gate.getWeightAttr(),
                                                                     up.getWeightAttr()}))}));
        OpBuilder ob(m);
        auto fused = ob.create<FusedLinearOp>(
            m.getLoc(), TypeRange{m.getType()}, ValueRange{gate.getInput()},
            ArrayRef<NamedAttribute>{b.getNamedAttr("weight", b.getStringAttr(name)),
                                     b.getNamedAttr("format", gate.getFormatAttr()),
                                     b.getNamedAttr("swiglu", b.getUnitAttr())});
        if (auto layer = m->getAttr(attr::kLayer))
          fused->setAttr(attr::kLayer, layer);
        m.replaceAllUsesWith(fused.getResults()[0]);
        m.erase();
        silu.erase();
        gate.erase();
        up.erase();
        ++numFused;
        break;
      }
    }
  }
};

} // namespace
} // namespace kiln
