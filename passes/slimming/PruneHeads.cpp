//===- PruneHeads.cpp - remove attention query heads, GQA-aware ------------===//
//
// Per layer, the kept rows of wq and columns of wo become derived weights; a KV head
// left without query heads loses its wk/wv rows (and its KV-cache slice). The q/k/v
// projections, ropes, the attention op and the output projection get consistent types.
//===----------------------------------------------------------------------===//
#include "passes/slimming/Passes.h"

#include <set>

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

#include "models/weights/DerivedWeights.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "passes/slimming/SlimmingUtils.h"

#define DEBUG_TYPE "kiln-prune-heads"

namespace kiln {
#define GEN_PASS_DEF_KILNPRUNEHEADS
#include "passes/slimming/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// "0:1,5;3:2" -> {0: {1, 5}, 3: {2}}. One-line error on malformed input.
bool parseSpec(StringRef spec, std::map<int32_t, std::set<int32_t>> &out, std::string &error) {
  SmallVector<StringRef> groups;
  spec.split(groups, ';', -1, /*KeepEmpty=*/false);
  for (StringRef group : groups) {
    group = group.trim();
    auto [layerText, headsText] = group.split(':');
    int32_t layer;
    if (!group.contains(':') || layerText.trim().getAsInteger(10, layer) || layer < 0) {
      error = "'" + group.str() + "' is not LAYER:HEAD[,HEAD...]";
      return false;
    }
    if (out.count(layer)) {
      error = "layer " + std::to_string(layer) + " is listed twice";
      return false;
    }
    std::set<int32_t> &heads = out[layer];
    SmallVector<StringRef> items;
    headsText.split(items, ',', -1, /*KeepEmpty=*/true);
    for (StringRef item : items) {
      int32_t h;
      if (item.trim().getAsInteger(10, h) || h < 0) {
        error = "'" + group.str() + "': '" + item.str() + "' is not a head index";
        return false;
      }
      if (!heads.insert(h).second) {
        error =
            "layer " + std::to_string(layer) + ": head " + std::to_string(h) + " is listed twice";
        return false;
      }
    }
  }
  return true;
}

RankedTensorType withFeatures(Type t, int64_t features) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get({r.getDimSize(0), features}, r.getElementType());
}

// A projection feeding the attention, optionally through a rope, with no other users.
struct Branch {
  LinearOp linear;
  RopeOp rope; // may be null
};

struct PruneHeads : public impl::KilnPruneHeadsBase<PruneHeads> {
  using KilnPruneHeadsBase::KilnPruneHeadsBase;

  FailureOr<Branch> branchOf(AttentionOp a, Value v, StringRef what, int32_t layer) {
    Branch b;
    Value x = v;
    if (auto r = x.getDefiningOp<RopeOp>()) {
      if (!r->hasOneUse())
        return emitError(a.getLoc()) << "kiln-prune-heads: layer " << layer << ": the rope of "
                                     << what << " has other users";
      b.rope = r;
      x = r.getInput();
    }
    b.linear = x.getDefiningOp<LinearOp>();
    if (!b.linear || !b.linear->hasOneUse())
      return emitError(a.getLoc()) << "kiln-prune-heads: layer " << layer << ": " << what
                                   << " is not a kiln.linear used only by this attention";
    if (b.linear.getBias())
      return emitError(a.getLoc()) << "kiln-prune-heads: layer " << layer << ": the " << what
                                   << " projection has a bias; selecting its rows is not supported";
    return b;
  }

  // A derived weight of `current`'s rows or columns `indices`. Selections of a selection
  // compose into one recipe on the stored tensor.
  std::string derive(ModuleOp module, StringRef current, DeriveOp op,
                     std::vector<int64_t> indices) {
    Builder b(&getContext());
    std::string source = current.str();
    if (auto all = module->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr))
      if (auto recipe = all.getAs<DictionaryAttr>(current)) {
        auto src = recipe.getAs<StringAttr>("source");
        auto kind = recipe.getAs<StringAttr>("op");
        auto old = recipe.getAs<DenseI64ArrayAttr>("indices");
        if (src && kind && kind.getValue() == stringifyDeriveOp(op) && old) {
          for (int64_t &i : indices)
            i = old[i];
          source = src.str();
        }
      }
    auto recipe = derivedRecipe(&getContext(), op,
                                {b.getNamedAttr("source", b.getStringAttr(source)),
                                 b.getNamedAttr("indices", b.getDenseI64ArrayAttr(indices))});
    // Reuse a name holding the same recipe; else the first free "<source>.pruned[N]".
    auto all = module->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr);
    for (int n = 0;; ++n) {
      std::string name = source + ".pruned" + (n ? std::to_string(n) : "");
      Attribute existing = all ? all.get(name) : Attribute();
      if (existing == recipe)
        return name;
      if (!existing) {
        addDerivedWeight(module, name, recipe);
        return name;
      }
    }
  }

  // Drops recipes that no op and no other recipe names any more.
  void collectUnused(ModuleOp module) {
    auto all = module->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr);
    if (!all)
      return;
    std::set<std::string> used;
    module.walk([&](Operation *op) {
      for (const char *attr : {"weight", "bias"})
        if (auto w = op->getAttrOfType<StringAttr>(attr))
          used.insert(w.str());
    });
    bool changed = true;
    while (changed) {
      changed = false;
      for (NamedAttribute e : all)
        if (used.count(e.getName().str()))
          if (auto r = dyn_cast<DictionaryAttr>(e.getValue()))
            if (auto s = r.getAs<StringAttr>("source"))
              changed |= used.insert(s.str()).second;
    }
    NamedAttrList kept;
    for (NamedAttribute e : all)
      if (used.count(e.getName().str()))
        kept.push_back(e);
    if (kept.empty())
      module->removeAttr(kDerivedWeightsAttr);
    else
      module->setAttr(kDerivedWeightsAttr, kept.getDictionary(&getContext()));
  }

  std::vector<int64_t> blocks(const std::vector<int32_t> &ids, int64_t width) {
    std::vector<int64_t> out;
    for (int32_t id : ids)
      for (int64_t j = 0; j < width; ++j)
        out.push_back(int64_t(id) * width + j);
    return out;
  }

  void rewriteWeight(ModuleOp module, LinearOp l, DeriveOp op, std::vector<int64_t> idx) {
    l.setWeightAttr(StringAttr::get(&getContext(), derive(module, l.getWeight(), op, idx)));
  }

  // Removes `drop` (query head indices of `a`) from one attention op.
  LogicalResult pruneLayer(ModuleOp module, AttentionOp a, int32_t layer,
                           const std::set<int32_t> &drop, uint64_t &params, uint64_t &kvPerToken,
                           int64_t &kvRemoved) {
    const int32_t heads = int32_t(a.getNumHeads()), kvHeads = int32_t(a.getNumKvHeads());
    const int64_t hd = int64_t(a.getHeadDim());
    for (int32_t h : drop)
      if (h >= heads)
        return emitError(a.getLoc()) << "kiln-prune-heads: layer " << layer << " has " << heads
                                     << " heads; head " << h << " does not exist";
    if (int32_t(drop.size()) >= heads)
      return emitError(a.getLoc())
             << "kiln-prune-heads: removing " << drop.size() << " of the " << heads
             << " heads would leave layer " << layer << " with no heads";
    FailureOr<Branch> q = branchOf(a, a.getQ(), "q", layer);
    if (failed(q))
      return failure();
    FailureOr<Branch> k = branchOf(a, a.getK(), "k", layer);
    if (failed(k))
      return failure();
    FailureOr<Branch> v = branchOf(a, a.getV(), "v", layer);
    if (failed(v))
      return failure();
    Value result = a.getResult();
    if (!result.hasOneUse() || !isa<LinearOp>(*result.getUsers().begin()))
      return emitError(a.getLoc()) << "kiln-prune-heads: layer " << layer
                                   << ": the attention result must feed one kiln.linear (wo)";
    auto wo = cast<LinearOp>(*result.getUsers().begin());

    std::vector<int32_t> kvOf(heads);
    for (int32_t h = 0; h < heads; ++h)
      kvOf[h] = a.getKvHeadMap() ? (*a.getKvHeadMap())[h] : h / (heads / kvHeads);
    std::vector<int32_t> keptHeads;
    std::set<int32_t> keptGroupSet;
    for (int32_t h = 0; h < heads; ++h)
      if (!drop.count(h)) {
        keptHeads.push_back(h);
        keptGroupSet.insert(kvOf[h]);
      }
    std::vector<int32_t> keptGroups(keptGroupSet.begin(), keptGroupSet.end());
    std::map<int32_t, int32_t> newGroup;
    for (size_t i = 0; i < keptGroups.size(); ++i)
      newGroup[keptGroups[i]] = int32_t(i);
    std::vector<int32_t> map;
    for (int32_t h : keptHeads)
      map.push_back(newGroup[kvOf[h]]);
    const int32_t newHeads = int32_t(keptHeads.size()), newKv = int32_t(keptGroups.size());
    bool even = newHeads % newKv == 0;
    for (int32_t i = 0; even && i < newHeads; ++i)
      even = map[i] == i / (newHeads / newKv);

    const int64_t dim = features(wo.getResult()), in = features(q->linear.getInput());
    params += uint64_t(drop.size()) * hd * (uint64_t(in) + uint64_t(dim));
    const int64_t groupsGone = kvHeads - newKv;
    params += uint64_t(groupsGone) * hd * uint64_t(in) * 2;
    kvPerToken += uint64_t(groupsGone) * hd * 4 * 2;
    kvRemoved += groupsGone;

    // Queries and output projection.
    rewriteWeight(module, q->linear, DeriveOp::select_rows, blocks(keptHeads, hd));
    auto qType = withFeatures(q->linear.getType(), newHeads * hd);
    q->linear.getResult().setType(qType);
    if (q->rope)
      q->rope.getResult().setType(qType);
    result.setType(qType);
    rewriteWeight(module, wo, DeriveOp::select_cols, blocks(keptHeads, hd));
    // Keys and values, when a whole group went.
    if (groupsGone > 0) {
      auto kvType = withFeatures(k->linear.getType(), newKv * hd);
      for (Branch *br : {&*k, &*v}) {
        rewriteWeight(module, br->linear, DeriveOp::select_rows, blocks(keptGroups, hd));
        br->linear.getResult().setType(kvType);
        if (br->rope)
          br->rope.getResult().setType(kvType);
      }
    }
    Builder b(&getContext());
    a.setNumHeadsAttr(b.getI32IntegerAttr(newHeads));
    a.setNumKvHeadsAttr(b.getI32IntegerAttr(newKv));
    if (even)
      a.removeKvHeadMapAttr();
    else
      a.setKvHeadMapAttr(b.getDenseI32ArrayAttr(map));
    numHeadsRemoved += drop.size();
    numKvHeadsRemoved += uint64_t(groupsGone);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::map<int32_t, std::set<int32_t>> spec;
    std::string error;
    if (!parseSpec(heads, spec, error)) {
      emitError(module.getLoc()) << "kiln-prune-heads: " << error;
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      emitError(module.getLoc(), "kiln-prune-heads: the module has no @forward");
      return signalPassFailure();
    }
    std::map<int32_t, AttentionOp> attention;
    std::vector<int64_t> layerIds;
    for (auto &[l, ops] : slimming::opsByLayer(forward))
      for (Operation *op : ops)
        if (auto a = dyn_cast<AttentionOp>(op)) {
          if (attention.count(l)) {
            emitError(a.getLoc()) << "kiln-prune-heads: layer " << l << " has two attention ops";
            return signalPassFailure();
          }
          attention[l] = a;
          layerIds.push_back(l);
        }
    uint64_t params = 0, kvPerToken = 0;
    int64_t kvRemoved = 0, headsRemoved = 0;
    std::string summary;
    for (auto &[l, drop] : spec) {
      if (!attention.count(l)) {
        emitError(module.getLoc())
            << "kiln-prune-heads: layer " << l
            << " does not exist or has no attention (layers with attention: "
            << (layerIds.empty() ? "none" : slimming::joinList(layerIds)) << ")";
        return signalPassFailure();
      }
      if (drop.empty())
        continue;
      if (failed(pruneLayer(module, attention[l], l, drop, params, kvPerToken, kvRemoved)))
        return signalPassFailure();
      headsRemoved += int64_t(drop.size());
      summary += (summary.empty() ? "" : ";") + std::to_string(l) + ":" +
                 slimming::joinList(std::vector<int64_t>(drop.begin(), drop.end()));
    }
    collectUnused(module);

    std::string effects = "heads_removed=" + std::to_string(headsRemoved) +
                          ",kv_heads_removed=" + std::to_string(kvRemoved) +
                          ",removed=" + (summary.empty() ? std::string("none") : summary) +
                          ",params_removed=" + std::to_string(params) +
                          ",kv_bytes_per_token_saved=" + std::to_string(kvPerToken);
    slimming::recordPassEffects(module, "kiln-prune-heads", effects);
    emitRemark(module.getLoc()) << "kiln-prune-heads: " << effects;
  }

  static int64_t features(Value v) { return slimming::features(v); }
};

} // namespace
} // namespace kiln
