//===- SyntheticGguf.h - synthetic models written as GGUF files -----------===//
//
// The deterministic random-weight generators of models/ (SyntheticLlama.h), written
// through GgufWriter: `kiln synth` and the tests' tiny models. Same options => same bytes.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_GGUF_SYNTHETICGGUF_H
#define KILN_FRONTENDS_GGUF_SYNTHETICGGUF_H

#include <string>

#include "models/llama/SyntheticAdapter.h"
#include "models/llama/SyntheticLlama.h"

namespace kiln::gguf {

bool writeSyntheticLlama(const llama::SyntheticOptions &opts, const std::string &path,
                         std::string &error);

// A LoRA adapter (or head file) for the GGUF model at basePath (`kiln synth-adapter`).
bool writeSyntheticAdapter(const std::string &basePath,
                           const llama::SyntheticAdapterOptions &opts, const std::string &path,
                           std::string &error);

} // namespace kiln::gguf

#endif // KILN_FRONTENDS_GGUF_SYNTHETICGGUF_H
