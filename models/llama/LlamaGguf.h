//===- LlamaGguf.h - GGUF key map for the llama architecture --------------===//
//
// Reads the llama.* metadata into a LlamaConfig and checks that every tensor the
// architecture needs is present with the shape the metadata implies and a format kiln
// decodes. No LLVM/MLIR dependency (the sanitizer corpus test builds it).
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_LLAMA_LLAMAGGUF_H
#define KILN_MODELS_LLAMA_LLAMAGGUF_H

#include <string>

#include "compiler/frontends/gguf/GgufFile.h"
#include "models/llama/LlamaConfig.h"

namespace kiln::llama {

// On failure returns false and sets `error` to one line naming the key or tensor.
bool configFromGguf(const gguf::GgufFile &file, LlamaConfig &out, std::string &error);

} // namespace kiln::llama

#endif // KILN_MODELS_LLAMA_LLAMAGGUF_H
