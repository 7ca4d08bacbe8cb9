//===- FoldNormIntoLinear.cpp - rms_norm's weight into its linears --------===//
//
// rms_norm(x) W^T = (x / rms(x)) (W diag(g))^T: when only linears read the norm, each
// gets the derived weight W diag(g) and the norm stops scaling (kiln.rms_normalize).
// That saves one multiply per element and the read of g; only f32/f16 weights are folded
// (exact up to one rounding), quantised ones keep the separate scale.
//===----------------------------------------------------------------------===//
#include "passes/fusion/LinearFusionPasses.h"

#include "mlir/IR/Builders.h"

#include "models/weights/DerivedWeights.h"
#include "dialects/kiln/IR/KilnOps.h"

#define DEBUG_TYPE "kiln-fold-norm-into-linear"

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDNORMINTOLINEAR
#include "passes/fusion/LinearFusionPasses.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct FoldNormIntoLinear : public impl::KilnFoldNormIntoLinearBase<FoldNormIntoLinear> {
  using KilnFoldNormIntoLinearBase::KilnFoldNormIntoLinearBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<RmsNormOp> norms;
    module.walk([&](RmsNormOp n) { norms.push_back(n); });
    for (RmsNormOp n : norms) {
      Value y = n.getResult();
      // Any other reader needs the scaled value itself. A quantised weight is left alone:
      // W diag(g) quantises to other codes than W (stories260K's rules:attn_qkv=q4_0 mix
      // moved logits by 2.7), and the precision search measured W's quantisation error.
      auto foldable = [](Operation *u) {
        if (!isa<LinearOp, LogitsOp>(u))
          return false;
        const uint32_t f = weightReadsOf(u).front().format;
        return f == uint32_t(StorageFormat::f32) || f == uint32_t(StorageFormat::f16);
      };
      if (y.use_empty() || !llvm::all_of(y.getUsers(), foldable))
        continue;
      foldNormIntoReaders(module, n);
      ++numFolded;
    }
  }
};

} // namespace

Value foldNormIntoReaders(ModuleOp module, RmsNormOp norm) {
  Builder b(module.getContext());
  const std::string g = norm.getWeight().str();
  for (Operation *u : norm.getResult().getUsers()) {
    const std::string w = weightReadsOf(u).front().name.str();
    const std::string folded = w + ".fold(" + g + ")";
    addDerivedWeight(module, folded,
                     derivedRecipe(module.getContext(), DeriveOp::scale_cols,
                                   {b.getNamedAttr("source", b.getStringAttr(w)),
                                    b.getNamedAttr("by", b.getStringAttr(g))}));
    u->setAttr("weight", b.getStringAttr(folded));
  }
  OpBuilder ob(norm);
  auto plain =
      ob.create<RmsNormalizeOp>(norm.getLoc(), norm.getType(), norm.getInput(), norm.getEpsAttr());
  for (NamedAttribute a : norm->getDiscardableAttrs())
    plain->setAttr(a.getName(), a.getValue());
  norm.replaceAllUsesWith(plain.getResult());
  norm.erase();
  return plain.getResult();
}

} // namespace kiln
