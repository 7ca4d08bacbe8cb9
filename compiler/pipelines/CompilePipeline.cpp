#include "compiler/pipelines/CompilePipeline.h"

#include <cstdio>

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include "passes/layout/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/slimming/Passes.h"
#include "passes/slimming/SlimmingUtils.h"

namespace kiln::pipelines {

namespace {

// Runs `pm`; errors become one line, remarks and warnings go to stderr unless quiet.
bool run(mlir::PassManager &pm, mlir::ModuleOp module, bool quiet, std::string &error) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
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

std::string joinLayers(const std::vector<int32_t> &layers) {
  return slimming::joinList(std::vector<int64_t>(layers.begin(), layers.end()));
}

} // namespace

bool runSlimmingPasses(mlir::ModuleOp module, const CompileOptions &opts,
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
  if (!run(pm, module, opts.quiet, error))
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

bool runKilnPipeline(mlir::ModuleOp module, const CompileOptions &opts,
                     std::vector<AppliedPass> &applied, std::string &error) {
  if (!runSlimmingPasses(module, opts, applied, error))
    return false;
  mlir::PassManager pm(module.getContext());
  KilnAssignUniformFormatOptions uniform;
  uniform.format = opts.weightFormat;
  pm.addPass(createKilnAssignUniformFormat(uniform));
  if (!run(pm, module, opts.quiet, error))
    return false;
  applied.push_back({"kiln-assign-uniform-format", "format=" + opts.weightFormat, ""});
  return true;
}

bool runLayoutPass(mlir::ModuleOp module, const std::string &layout, bool quiet,
                   std::vector<AppliedPass> &applied, std::string &error) {
  if (layout == "none")
    return true;
  mlir::PassManager pm(module.getContext());
  KilnAssignLayoutOptions o;
  o.layout = layout;
  pm.addPass(createKilnAssignLayout(o));
  if (!run(pm, module, quiet, error))
    return false;
  int64_t packed = 0, rows = 0;
  module.walk([&](mlir::Operation *op) {
    if (auto l = op->getAttrOfType<mlir::StringAttr>("kiln.layout"))
      ++(l.getValue() == "r16" ? packed : rows);
  });
  applied.push_back({"kiln-assign-layout", "layout=" + layout,
                     "r16_ops=" + std::to_string(packed) + ",rows64_ops=" + std::to_string(rows)});
  return true;
}

} // namespace kiln::pipelines
