// libFuzzer: the Hugging Face tokenizer.json reader (compiler/frontends/hf) on arbitrary
// bytes, and the runtime tokenizer made from a record it accepts, on a fixed text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/frontends/hf/TokenizerJson.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  kiln::artifact::TokenizerRecord rec;
  std::string error;
  if (!kiln::hf::parseTokenizerJson(text, "", "fuzz", rec, error))
    return 0;
  kiln::hf::makeTokenizer(rec, error);
  return 0;
}
