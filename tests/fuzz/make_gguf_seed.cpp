// Writes a tiny synthetic Llama GGUF (models/llama/SyntheticLlama.h: 260-token SPM
// vocabulary, dim 8, one layer, q8_0 matrices, about 20 KB) as the GGUF harness's seed:
// every key and tensor kind a real file has, in a size the fuzzer can mutate quickly.
//   make-gguf-seed OUT
#include <cstdio>
#include <string>

#include "compiler/frontends/gguf/SyntheticGguf.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make-gguf-seed OUT\n");
    return 2;
  }
  kiln::llama::SyntheticOptions o;
  o.config.vocabSize = 260;
  o.config.dim = 32;
  o.config.numLayers = 1;
  o.config.numHeads = 2;
  o.config.numKvHeads = 1;
  o.config.headDim = 16;
  o.config.ffnDim = 64;
  o.config.contextLength = 64;
  o.config.ropeDims = 16;
  o.config.tiedOutput = true;
  o.weightType = 8; // q8_0
  std::string error;
  if (!kiln::gguf::writeSyntheticLlama(o, argv[1], error)) {
    std::fprintf(stderr, "make-gguf-seed: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
