//===- CompilePipeline.h - the one place where kiln's passes are ordered --===//
#ifndef KILN_COMPILER_PIPELINES_COMPILEPIPELINE_H
#define KILN_COMPILER_PIPELINES_COMPILEPIPELINE_H

#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

namespace kiln::pipelines {

struct CompileOptions {
  std::string weightFormat = "f32"; // f32 | f16 | q8_0
};

// A pass that ran, for the artifact's provenance.
struct AppliedPass {
  std::string name, params, effects;
};

// Runs the kiln-level passes on an imported module, in order. One-line error on failure.
bool runKilnPipeline(mlir::ModuleOp module, const CompileOptions &opts,
                     std::vector<AppliedPass> &applied, std::string &error);

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_COMPILEPIPELINE_H
