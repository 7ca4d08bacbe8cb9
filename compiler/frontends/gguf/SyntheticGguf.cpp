#include "compiler/frontends/gguf/SyntheticGguf.h"

#include "compiler/frontends/gguf/GgufAdapter.h"
#include "compiler/frontends/gguf/GgufWriter.h"

namespace kiln::gguf {

bool writeSyntheticLlama(const llama::SyntheticOptions &opts, const std::string &path,
                         std::string &error) {
  GgufWriter w;
  return llama::addSyntheticLlama(w, opts, error) && w.writeFile(path, error);
}

bool writeSyntheticAdapter(const std::string &basePath,
                           const llama::SyntheticAdapterOptions &opts, const std::string &path,
                           std::string &error) {
  std::unique_ptr<GgufFile> base = GgufFile::open(basePath, error);
  if (!base)
    return false;
  if (isAdapterFile(*base)) {
    error = "'" + basePath + "' is itself an adapter: give the base model";
    return false;
  }
  WeightStore weights;
  const models::ModelSource source = modelSource(*base, weights);
  GgufWriter w;
  return llama::addSyntheticAdapter(w, weights, source.architecture(), opts, error) &&
         w.writeFile(path, error);
}

} // namespace kiln::gguf
