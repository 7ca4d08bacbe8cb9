#include "compiler/pipelines/CompilePipeline.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <utility>

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include "dialects/kiln/IR/KilnOps.h"
#include "passes/fusion/Passes.h"
#include "passes/fusion/LinearFusionPasses.h"
#include "passes/precision/Passes.h"
#include "passes/slimming/Passes.h"
#include "passes/slimming/SlimmingUtils.h"

namespace kiln::pipelines {

namespace {

// Where an error happened: the model's name for the op (the builders' NameLoc: a weight or
// layer), or a position in a kiln-opt input; nothing for the module.
std::string placeOf(mlir::Location loc) {
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc))
    return " (at " + name.getName().str() + ")";
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return " (at " + file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
           std::to_string(file.getColumn()) + ")";
  return "";
}

} // namespace

bool runPassManager(mlir::PassManager &pm, mlir::ModuleOp module, bool quiet,
                    std::string &error) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "; ") + d.str() + placeOf(d.getLocation());
    else if (!quiet)
      std::fprintf(stderr, "kiln: %s%s\n",
                   d.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning: " : "",
                   d.str().c_str());
    return mlir::success();
  });
  if (mlir::failed(pm.run(module))) {
    error = diagnostics.empty() ? "the kiln pass pipeline failed" : diagnostics;
    return false;
  }
  return true;
}

namespace {

std::string joinLayers(const std::vector<int32_t> &layers) {
  return slimming::joinList(std::vector<int64_t>(layers.begin(), layers.end()));
}

} // namespace

bool parseFusion(const std::string &spec, FusionSet &out, std::string &error) {
  out = FusionSet();
  if (spec == "none")
    return true;
  if (spec == "all") {
    out = {true, true, true, true, true};
    return true;
  }
  if (spec == "auto") {
    out.rope = true;
    return true;
  }
  size_t begin = 0;
  while (true) {
    size_t end = spec.find(',', begin);
    std::string item = spec.substr(begin, end == std::string::npos ? end : end - begin);
    bool *flag = item == "qkv"        ? &out.qkv
                 : item == "swiglu"   ? &out.swiglu
                 : item == "norm"     ? &out.norm
                 : item == "residual" ? &out.residual
                 : item == "rope"     ? &out.rope
                                      : nullptr;
    if (!flag) {
      error = "--fusion: unknown fusion '" + item +
              "' (use all, none, auto or a comma list of qkv, swiglu, norm, residual, rope)";
      return false;
    }
    *flag = true;
    if (end == std::string::npos)
      return true;
    begin = end + 1;
  }
}

namespace {

// Norm folding first (it rewrites the single linears' weights, which the stacked weights
// then read), SwiGLU before QKV (which would otherwise stack gate and up as two plain
// segments), residual last. Each records how many ops it fused, for kiln inspect.
bool runLinearFusions(mlir::ModuleOp module, const KilnPipelineOptions &opts,
                      std::vector<AppliedPass> &applied, std::string &error) {
  FusionSet set;
  if (!parseFusion(opts.fusion, set, error))
    return false;
  struct Step {
    bool on;
    const char *name;
    std::unique_ptr<mlir::Pass> (*create)();
    std::function<bool(mlir::Operation *)> made; // an op this pass produced
  };
  auto fused = [](mlir::Operation *op) { return mlir::dyn_cast<FusedLinearOp>(op); };
  Step steps[] = {
      {set.norm, "kiln-fold-norm-into-linear", createKilnFoldNormIntoLinear,
       [](mlir::Operation *op) { return mlir::isa<RmsNormalizeOp>(op); }},
      {set.swiglu, "kiln-fuse-swiglu", createKilnFuseSwiGlu,
       [&](mlir::Operation *op) { return fused(op) && fused(op).getSwiglu(); }},
      {set.qkv, "kiln-fuse-qkv", createKilnFuseQkv,
       [&](mlir::Operation *op) { return fused(op) && fused(op).getNumResults() > 1; }},
      {set.residual, "kiln-fuse-residual-add", createKilnFuseResidualAdd,
       [&](mlir::Operation *op) { return fused(op) && fused(op).getResidual(); }},
  };
  for (Step &step : steps) {
    if (!step.on)
      continue;
    mlir::PassManager pm(module.getContext());
    pm.addPass(step.create());
    if (!runPassManager(pm, module, opts.quiet, error))
      return false;
    int64_t count = 0;
    module.walk([&](mlir::Operation *op) { count += step.made(op) ? 1 : 0; });
    applied.push_back({step.name, "fusion=" + opts.fusion, "fused=" + std::to_string(count)});
  }
  return true;
}

} // namespace

bool runSlimmingPasses(mlir::ModuleOp module, const KilnPipelineOptions &opts,
                       std::vector<AppliedPass> &applied, std::string &error) {
  mlir::PassManager pm(module.getContext());
  if (opts.maxCtx) {
    KilnPruneContextOptions o;
    o.maxCtx = opts.maxCtx;
    pm.addPass(createKilnPruneContext(o));
  }
  if (!opts.pruneLayers.empty()) {
    KilnPruneLayersOptions o;
    o.layers = opts.pruneLayers;
    pm.addPass(createKilnPruneLayers(o));
  }
  if (!opts.pruneHeads.empty()) {
    KilnPruneHeadsOptions o;
    o.heads = opts.pruneHeads;
    pm.addPass(createKilnPruneHeads(o));
  }
  if (pm.size() == 0)
    return true;
  if (!runPassManager(pm, module, opts.quiet, error))
    return false;
  if (opts.maxCtx)
    applied.push_back({"kiln-prune-context", "max_ctx=" + std::to_string(opts.maxCtx),
                       slimming::passEffects(module, "kiln-prune-context")});
  if (!opts.pruneLayers.empty())
    applied.push_back({"kiln-prune-layers", "layers=" + joinLayers(opts.pruneLayers),
                       slimming::passEffects(module, "kiln-prune-layers")});
  if (!opts.pruneHeads.empty()) {
    std::string spec = opts.pruneHeads;
    for (char &c : spec)
      c = c == ',' ? '+' : c;
    applied.push_back(
        {"kiln-prune-heads", "heads=" + spec, slimming::passEffects(module, "kiln-prune-heads")});
  }
  return true;
}

bool runResidualRotation(mlir::ModuleOp module, std::vector<AppliedPass> &applied,
                         std::string &error) {
  mlir::PassManager pm(module.getContext());
  KilnRotateResidualOptions o;
  pm.addPass(createKilnRotateResidual(o));
  if (!runPassManager(pm, module, /*quiet=*/false, error))
    return false;
  int64_t count = 0;
  module.walk([&](mlir::Operation *op) {
    for (const WeightRead &w : weightReadsOf(op))
      count += w.name.ends_with(":rotated") ? 1 : 0;
  });
  applied.push_back({"kiln-rotate-residual", "seed=" + std::to_string(o.seed),
                     "rotated=" + std::to_string(count)});
  return true;
}

bool runPrecisionPasses(mlir::ModuleOp module, const KilnPipelineOptions &opts,
                        std::vector<AppliedPass> &applied, std::string &error) {
  mlir::PassManager pm(module.getContext());
  const bool lossless = opts.weightFormat == "lossless";
  const bool source = opts.precisionRules.empty() && (opts.weightFormat == "source" || lossless);
  if (source) {
    KilnAssignSourceFormatOptions keep;
    keep.keepKQuants = lossless;
    keep.keepPackedKQuants = opts.keepPackedKQuants;
    pm.addPass(createKilnAssignSourceFormat(keep));
  } else if (opts.precisionRules.empty()) {
    KilnAssignUniformFormatOptions uniform;
    uniform.format = opts.weightFormat;
    pm.addPass(createKilnAssignUniformFormat(uniform));
  } else {
    KilnAssignRulesFormatOptions rules;
    rules.rules = opts.precisionRules;
    pm.addPass(createKilnAssignRulesFormat(rules));
  }
  if (!opts.precisionMap.empty()) {
    KilnApplyPrecisionMapOptions map;
    map.map = opts.precisionMap;
    pm.addPass(createKilnApplyPrecisionMap(map));
  }
  if (!runPassManager(pm, module, opts.quiet, error))
    return false;
  if (source)
    applied.push_back({"kiln-assign-source-format",
                       lossless                 ? "keep-kquants=true"
                       : opts.keepPackedKQuants ? "keep-packed-kquants=true"
                                                : "",
                       slimming::passEffects(module, "kiln-assign-source-format")});
  else if (opts.precisionRules.empty())
    applied.push_back({"kiln-assign-uniform-format", "format=" + opts.weightFormat, ""});
  else
    applied.push_back({"kiln-assign-rules-format", "rules=" + opts.precisionRules, ""});
  if (!opts.precisionMap.empty())
    applied.push_back({"kiln-apply-precision-map", "map=" + opts.precisionMap, ""});
  return true;
}

std::string resolveFusion(mlir::ModuleOp module, const KilnPipelineOptions &opts) {
  if (opts.fusion != "auto")
    return opts.fusion;
  // Measured (docs/perf.md, "--fusion auto"): on the r16 kernels with weights
  // streamed from DRAM (TinyLlama q4_0) the fused linears ran decode 1.03x and prefill 1.00x
  // (2026-12-05; 1.04-1.37x and 1.10-1.18x on the slower unfused kernels of 11-30); on a
  // model that sits in cache (stories260K q4_0: 0.84-0.92x prefill, 0.91-1.0x decode) and
  // on fp32 weights (0.80-0.92x) they lost, so they stay off there.
  constexpr int64_t kStreamedWeights = int64_t(1) << 24; // elements: ~9 MB at int4
  bool packed = opts.layout == "r16" || opts.layout == "r32";
  int64_t elements = 0;
  module.walk([&](LinearOp op) {
    const StorageFormat f = op.getFormat();
    packed = packed && (f == StorageFormat::q4_0 || f == StorageFormat::q4_1 ||
                        f == StorageFormat::q8_0);
    auto in = mlir::cast<mlir::ShapedType>(op.getInput().getType());
    auto out = mlir::cast<mlir::ShapedType>(op.getType());
    elements += in.getShape().back() * out.getShape().back();
  });
  return packed && elements >= kStreamedWeights ? "qkv,swiglu,residual,rope" : "rope";
}

bool runFusionPasses(mlir::ModuleOp module, const KilnPipelineOptions &given,
                     std::vector<AppliedPass> &applied, std::string &error) {
  KilnPipelineOptions opts = given;
  opts.fusion = resolveFusion(module, given);
  FusionSet set;
  if (!runLinearFusions(module, opts, applied, error) || !parseFusion(opts.fusion, set, error))
    return false;
  if (set.rope) {
    mlir::PassManager fuse(module.getContext());
    fuse.addPass(createKilnFuseRopeIntoAttention());
    if (!runPassManager(fuse, module, opts.quiet, error))
      return false;
    applied.push_back({"kiln-fuse-rope-into-attention", "fusion=" + opts.fusion,
                       slimming::passEffects(module, "kiln-fuse-rope-into-attention")});
  }
  return true;
}

} // namespace kiln::pipelines
