#include "compiler/frontends/gguf/SyntheticGguf.h"

#include "compiler/frontends/gguf/GgufWriter.h"

namespace kiln::gguf {

bool writeSyntheticLlama(const llama::SyntheticOptions &opts, const std::string &path,
                         std::string &error) {
  GgufWriter w;
  return llama::addSyntheticLlama(w, opts, error) && w.writeFile(path, error);
}

} // namespace kiln::gguf
