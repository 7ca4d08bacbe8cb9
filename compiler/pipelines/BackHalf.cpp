#include "compiler/pipelines/BackHalf.h"

#include <algorithm>

#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "passes/layout/Passes.h"
#include "passes/memory/Passes.h"

namespace kiln::pipelines {

namespace {

std::string layoutOf(const codegen::TargetBackend &target, const BackHalfOptions &o) {
  return o.layout == "packed" ? target.packedLayout() : o.layout;
}

codegen::CacheBudget prefillCacheOf(const codegen::TargetBackend &target,
                                    const BackHalfOptions &o) {
  return o.l2Kib ? codegen::CacheBudget{*o.l2Kib, "flag"} : target.prefillCache();
}

// Ops carrying the integer attribute `name` (a sizing pass's output) and its smallest value.
std::pair<int64_t, int64_t> countIntAttr(mlir::ModuleOp module, llvm::StringRef name) {
  int64_t ops = 0, smallest = 0;
  module.walk([&](mlir::Operation *op) {
    if (auto a = op->getAttrOfType<mlir::IntegerAttr>(name)) {
      ++ops;
      smallest = smallest ? std::min<int64_t>(smallest, a.getInt()) : a.getInt();
    }
  });
  return {ops, smallest};
}

// The provenance of each back-half pass, taken as it finishes (the lowering removes the
// attributes it counts).
class Provenance : public mlir::PassInstrumentation {
public:
  Provenance(const codegen::TargetBackend &target, const BackHalfOptions &o,
             std::vector<AppliedPass> &applied)
      : target(target), o(o), applied(applied) {}

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    auto module = mlir::dyn_cast<mlir::ModuleOp>(op);
    if (!module)
      return;
    const llvm::StringRef arg = pass->getArgument();
    if (arg == "kiln-assign-layout") {
      const std::string layout = layoutOf(target, o);
      // on an r32 target the K-quants' r16 groups are counted on their own
      int64_t packed = 0, r16Beside = 0, rows = 0, block = 0;
      module.walk([&](mlir::Operation *op) {
        const std::optional<Layout> l = kiln::layoutOf(op);
        if (!l)
          return;
        if (readsRowGroups(op))
          ++(layout == "r32" && l == Layout::r16 ? r16Beside : packed);
        else
          ++(l == Layout::block ? block : rows);
      });
      applied.push_back(
          {arg.str(), "layout=" + layout + ",row-align=" + std::to_string(target.rowAlignBytes()),
           (layout == "r32" ? "r32_ops=" : "r16_ops=") + std::to_string(packed) +
               (r16Beside ? ",r16_ops=" + std::to_string(r16Beside) : "") +
               ",rows64_ops=" + std::to_string(rows) +
               (block ? ",block_ops=" + std::to_string(block) : "")});
    } else if (arg == "kiln-size-prefill-panels") {
      const codegen::CacheBudget cache = prefillCacheOf(target, o);
      const auto [ops, smallest] = countIntAttr(module, attr::kTokenPanel);
      applied.push_back({arg.str(),
                         "cache-kib=" + std::to_string(cache.kib) + ",from=" + cache.from +
                             ",max-batch=" + std::to_string(o.maxBatch),
                         "panelled_ops=" + std::to_string(ops) +
                             (ops ? ",smallest_panel=" + std::to_string(smallest) : "")});
    } else if (arg == "kiln-size-weight-shards") {
      const codegen::CacheBudget cache = target.shardCache();
      const auto [ops, smallest] = countIntAttr(module, attr::kShardGroups);
      applied.push_back(
          {arg.str(), "cache-kib=" + std::to_string(cache.kib) + ",from=" + cache.from,
           "sharded_ops=" + std::to_string(ops) +
               (ops ? ",smallest_shard_groups=" + std::to_string(smallest) : "")});
    }
  }

private:
  const codegen::TargetBackend &target;
  const BackHalfOptions &o;
  std::vector<AppliedPass> &applied;
};

} // namespace

void buildBackHalfPipeline(mlir::OpPassManager &pm, const codegen::TargetBackend &target,
                           const BackHalfOptions &o, codegen::LoweringWeights &weights,
                           BackHalfStage stopAfter) {
  const std::string layout = layoutOf(target, o);
  if (layout != "none") {
    KilnAssignLayoutOptions l;
    l.layout = layout;
    l.rowAlign = target.rowAlignBytes();
    pm.addPass(createKilnAssignLayout(l));
  }
  if (const codegen::CacheBudget cache = prefillCacheOf(target, o); cache.kib) {
    KilnSizePrefillPanelsOptions p;
    p.cacheKib = cache.kib;
    p.maxBatch = o.maxBatch;
    pm.addPass(createKilnSizePrefillPanels(p));
  }
  if (const codegen::CacheBudget cache = target.shardCache(); cache.kib) {
    KilnSizeWeightShardsOptions s;
    s.cacheKib = cache.kib;
    pm.addPass(createKilnSizeWeightShards(s));
  }
  KilnPlanMemoryOptions m;
  m.maxCtx = o.maxCtx;
  m.maxBatch = o.maxBatch;
  m.kv = o.kv;
  pm.addPass(createKilnPlanMemory(m));
  if (stopAfter == BackHalfStage::Kiln)
    return;
  target.addLoweringPasses(pm, weights);
}

bool runBackHalfPipeline(mlir::ModuleOp module, const codegen::TargetBackend &target,
                         const BackHalfOptions &o, codegen::LoweringWeights &weights,
                         BackHalfStage stopAfter, std::vector<AppliedPass> &applied,
                         std::string &error) {
  mlir::PassManager pm(module.getContext());
  buildBackHalfPipeline(pm, target, o, weights, stopAfter);
  pm.addInstrumentation(std::make_unique<Provenance>(target, o, applied));
  return runPassManager(pm, module, /*quiet=*/false, error);
}

} // namespace kiln::pipelines
