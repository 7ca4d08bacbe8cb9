//===- FuseQkv.cpp - linears of one input become one multi-result op ------===//
//
// q, k and v read the same normalised x: one kiln.fused_linear over their stacked rows
// reads x once per row tile instead of three times and makes one kernel call (one
// parallel_for) instead of three. Only linears of one storage format and without a bias
// are stacked: a weight has one format, and a bias would need a per-segment epilogue.
//===----------------------------------------------------------------------===//
#include "passes/fusion/LinearFusionPasses.h"

#include <map>

#include "mlir/IR/Builders.h"

#include "models/weights/DerivedWeights.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"

#define DEBUG_TYPE "kiln-fuse-qkv"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEQKV
#include "passes/fusion/LinearFusionPasses.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr unsigned kMaxSegments = 3; // kiln_uk_linear_fused writes at most three

struct FuseQkv : public impl::KilnFuseQkvBase<FuseQkv> {
  using KilnFuseQkvBase::KilnFuseQkvBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Groups in block order: (input, format) -> linears reading it.
    SmallVector<SmallVector<LinearOp>> groups;
    llvm::DenseMap<std::pair<Value, int64_t>, unsigned> index;
    module.walk([&](LinearOp l) {
      if (l.getBias())
        return;
      auto key = std::make_pair(l.getInput(), int64_t(l.getFormat()));
      auto [it, fresh] = index.try_emplace(key, groups.size());
      if (fresh)
        groups.emplace_back();
      groups[it->second].push_back(l);
    });
    Builder b(&getContext());
    for (SmallVector<LinearOp> &group : groups) {
      for (size_t begin = 0; begin + 1 < group.size(); begin += kMaxSegments) {
        SmallVector<LinearOp> part(
            group.begin() + begin,
            group.begin() + begin + std::min<size_t>(kMaxSegments, group.size() - begin));
        if (part.size() < 2)
          break;
        fuse(module, b, part);
      }
    }
  }

  void fuse(ModuleOp module, Builder &b, SmallVector<LinearOp> part) {
    SmallVector<Attribute> sources;
    SmallVector<Type> types;
    std::string name = "fused_rows(";
    for (LinearOp l : part) {
      sources.push_back(l.getWeightAttr());
      types.push_back(l.getType());
      name += (sources.size() > 1 ? "," : "") + l.getWeight().str();
    }
    name += ")";
    addDerivedWeight(module, name,
                     derivedRecipe(module.getContext(), DeriveOp::concat_rows,
                                   {b.getNamedAttr("sources", b.getArrayAttr(sources))}));
    // At the first linear: the input is defined before it, every use of any part after it.
    LinearOp first = part.front();
    OpBuilder ob(first);
    auto fused = ob.create<FusedLinearOp>(
        first.getLoc(), types, ValueRange{first.getInput()},
        ArrayRef<NamedAttribute>{b.getNamedAttr("weight", b.getStringAttr(name)),
                                 b.getNamedAttr("format", first.getFormatAttr())});
    if (auto layer = first->getAttr(attr::kLayer))
      fused->setAttr(attr::kLayer, layer);
    for (size_t k = 0; k < part.size(); ++k) {
      part[k].getResult().replaceAllUsesWith(fused.getResult(k));
      part[k].erase();
    }
    ++numFused;
  }
};

} // namespace
} // namespace kiln
