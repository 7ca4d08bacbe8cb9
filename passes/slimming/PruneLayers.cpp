//===- PruneLayers.cpp - remove whole decoder layers -----------------------===//
//
// Every op tagged kiln.layer = l goes; the layer's output is replaced by its input
// residual stream. The attention op (and so the layer's KV cache) goes deliberately.
//===----------------------------------------------------------------------===//
#include "passes/slimming/Passes.h"

#include <set>

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include "dialects/kiln/IR/KilnOps.h"
#include "passes/slimming/SlimmingUtils.h"

#define DEBUG_TYPE "kiln-prune-layers"

namespace kiln {
#define GEN_PASS_DEF_KILNPRUNELAYERS
#include "passes/slimming/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

std::string describe(const std::map<int32_t, std::vector<Operation *>> &layers) {
  std::vector<int64_t> ids;
  for (const auto &entry : layers)
    ids.push_back(entry.first);
  return ids.empty() ? "none" : slimming::joinList(ids);
}

struct PruneLayers : public impl::KilnPruneLayersBase<PruneLayers> {
  using KilnPruneLayersBase::KilnPruneLayersBase;

  // The one activation entering the layer and the one leaving it.
  LogicalResult residualOf(int32_t l, ArrayRef<Operation *> ops, Value &in, Value &out) {
    llvm::SmallPtrSet<Operation *, 32> inside(ops.begin(), ops.end());
    llvm::SetVector<Value> ins, outs;
    for (Operation *op : ops) {
      for (Value v : op->getOperands()) {
        auto t = dyn_cast<RankedTensorType>(v.getType());
        bool activation = t && t.getElementType().isF32();
        if (activation && !inside.contains(v.getDefiningOp()))
          ins.insert(v);
      }
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!inside.contains(user))
            outs.insert(r);
    }
    if (ins.size() != 1 || outs.size() != 1 || ins[0].getType() != outs[0].getType())
      return emitError(ops.front()->getLoc())
             << "kiln-prune-layers: layer " << l << " has " << ins.size()
             << " activation inputs and " << outs.size()
             << " outputs; only a layer with one residual stream in and out can be removed";
    in = ins[0];
    out = outs[0];
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      emitError(module.getLoc(), "kiln-prune-layers: the module has no @forward");
      return signalPassFailure();
    }
    auto byLayer = slimming::opsByLayer(forward);
    std::set<int32_t> remove;
    for (int32_t l : layers) {
      if (!byLayer.count(l)) {
        emitError(module.getLoc())
            << "kiln-prune-layers: layer " << l << " does not exist (the model has layers "
            << describe(byLayer) << ")";
        return signalPassFailure();
      }
      if (!remove.insert(l).second) {
        emitError(module.getLoc()) << "kiln-prune-layers: layer " << l << " is listed twice";
        return signalPassFailure();
      }
    }
    if (!remove.empty() && remove.size() == byLayer.size()) {
      emitError(module.getLoc()) << "kiln-prune-layers: cannot remove all " << byLayer.size()
                                 << " layers; at least one must remain";
      return signalPassFailure();
    }

    uint64_t params = 0, kvPerToken = 0;
    for (int32_t l : remove) {
      std::vector<Operation *> &ops = byLayer[l];
      Value in, out;
      if (failed(residualOf(l, ops, in, out)))
        return signalPassFailure();
      for (Operation *op : ops) {
        params += slimming::parameterCount(op);
        kvPerToken += slimming::kvBytesPerToken(op);
      }
      out.replaceAllUsesWith(in);
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
        (*it)->dropAllUses();
        (*it)->erase();
      }
      numOpsRemoved += ops.size();
    }

    std::vector<int64_t> removed(remove.begin(), remove.end());
    std::set<int64_t> all(removed.begin(), removed.end());
    if (auto old = module->getAttrOfType<DenseI32ArrayAttr>(slimming::kPrunedLayersAttr))
      all.insert(old.asArrayRef().begin(), old.asArrayRef().end());
    std::vector<int32_t> allRemoved(all.begin(), all.end());
    module->setAttr(slimming::kPrunedLayersAttr, DenseI32ArrayAttr::get(&getContext(), allRemoved));
    std::string effects =
        "layers_removed=" + (removed.empty() ? std::string("none") : slimming::joinList(removed)) +
        ",layers_left=" + std::to_string(byLayer.size() - remove.size()) +
        ",params_removed=" + std::to_string(params) +
        ",kv_bytes_per_token_saved=" + std::to_string(kvPerToken);
    slimming::recordPassEffects(module, "kiln-prune-layers", effects);
    emitRemark(module.getLoc()) << "kiln-prune-layers: " << effects;
  }
};

} // namespace
} // namespace kiln
