// libFuzzer: the GGUF reader on arbitrary bytes, then what the compiler reads from a file it
// accepts: the Llama model config (models/llama) and the vocabulary, as the runtime
// tokenizer (SPM) or the byte-level BPE record.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/frontends/gguf/GgufFile.h"
#include "compiler/frontends/gguf/GgufVocab.h"
#include "models/llama/LlamaGguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  auto file = kiln::gguf::GgufFile::parse(data, size, error);
  if (!file)
    return 0;
  kiln::llama::LlamaConfig config;
  kiln::WeightStore weights;
  kiln::llama::configFromSource(kiln::gguf::modelSource(*file, weights), config, error);
  kiln::gguf::Tokenizer::fromGguf(*file, error);
  kiln::artifact::TokenizerRecord rec;
  kiln::gguf::readBpeRecord(*file, rec, error);
  return 0;
}
