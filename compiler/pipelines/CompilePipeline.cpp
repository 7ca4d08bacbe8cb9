#include "compiler/pipelines/CompilePipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include "passes/precision/Passes.h"

namespace kiln::pipelines {

bool runKilnPipeline(mlir::ModuleOp module, const CompileOptions &opts,
                     std::vector<AppliedPass> &applied, std::string &error) {
  mlir::PassManager pm(module.getContext());
  KilnAssignUniformFormatOptions uniform;
  uniform.format = opts.weightFormat;
  pm.addPass(createKilnAssignUniformFormat(uniform));

  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic &d) {
    diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
    return mlir::success();
  });
  if (mlir::failed(pm.run(module))) {
    error = diagnostics.empty() ? "the kiln pass pipeline failed" : diagnostics;
    return false;
  }
  applied.push_back({"kiln-assign-uniform-format", "format=" + opts.weightFormat, ""});
  return true;
}

} // namespace kiln::pipelines
