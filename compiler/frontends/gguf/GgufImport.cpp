#include "compiler/frontends/gguf/GgufImport.h"

#include "models/ModelFamilies.h"
#include "models/llama/LlamaGguf.h"

namespace kiln::gguf {

bool importGguf(const std::string &path, mlir::MLIRContext &ctx, ImportedModel &out,
                std::string &error) {
  out.file = GgufFile::open(path, error);
  if (!out.file)
    return false;
  for (const TensorInfo &t : out.file->tensors())
    out.weights.add(WeightView{t.name, t.type, t.dims, t.data, t.nbytes});

  const Value *arch = out.file->find("general.architecture");
  if (!arch || arch->type != ValueType::String) {
    error = "missing metadata key 'general.architecture'";
    return false;
  }
  const models::ModelFamily *family = models::findModelFamily(arch->str);
  if (!family) {
    error = "unsupported architecture '" + arch->str +
            "' (supported: " + models::supportedArchitectures() + ")";
    return false;
  }
  out.module = family->buildFromGguf(*out.file, out.weights, ctx, error);
  if (!out.module)
    return false;
  return llama::configFromGguf(*out.file, out.config, error);
}

} // namespace kiln::gguf
