#include "models/ModelFamilies.h"

#include "models/llama/LlamaBuilder.h"
#include "models/llama/LlamaGguf.h"

namespace kiln::models {

namespace {

mlir::OwningOpRef<mlir::ModuleOp> buildLlama(const ModelSource &source, mlir::MLIRContext &ctx,
                                             std::string &error) {
  llama::LlamaConfig config;
  if (!llama::configFromSource(source, config, error))
    return nullptr;
  return llama::buildLlama(ctx, config, *source.weights, error);
}

const ModelFamily kFamilies[] = {
    {"llama", buildLlama},
};

} // namespace

const ModelFamily *findModelFamily(const std::string &arch) {
  for (const ModelFamily &f : kFamilies)
    if (arch == f.arch)
      return &f;
  return nullptr;
}

std::string supportedArchitectures() {
  std::string s;
  for (const ModelFamily &f : kFamilies)
    s += (s.empty() ? "" : ", ") + std::string(f.arch);
  return s;
}

} // namespace kiln::models
