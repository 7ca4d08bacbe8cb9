#include "compiler/frontends/gguf/GgufImport.h"

#include "compiler/frontends/gguf/GgufAdapter.h"

#include "models/ModelFamilies.h"
#include "models/llama/LlamaGguf.h"

namespace kiln::gguf {

bool importGguf(const std::string &path, mlir::MLIRContext &ctx, ImportedModel &out,
                std::string &error) {
  out.file = GgufFile::open(path, error);
  if (!out.file)
    return false;
  if (isAdapterFile(*out.file)) {
    error = "'" + path + "' is an adapter (general.type = adapter), not a model: give the "
            "base model and pass this file with --adapter";
    return false;
  }

  const models::ModelSource source = modelSource(*out.file, out.weights);
  const std::string arch = source.architecture();
  if (arch.empty()) {
    error = "missing metadata key 'general.architecture'";
    return false;
  }
  const models::ModelFamily *family = models::findModelFamily(arch);
  if (!family) {
    error = "unsupported architecture '" + arch +
            "' (supported: " + models::supportedArchitectures() + ")";
    return false;
  }
  out.module = family->build(source, ctx, error);
  if (!out.module)
    return false;
  return llama::configFromSource(source, out.config, error);
}

} // namespace kiln::gguf
