//===- Commands.h - the kiln driver's subcommands -------------------------===//
#ifndef KILN_TOOLS_KILN_COMMANDS_H
#define KILN_TOOLS_KILN_COMMANDS_H

#include <cstdint>
#include <string>

#include "compiler/eval/Sampler.h"

namespace kiln::tool {

struct ImportOptions {
  std::string model;
  std::string emit = "mlir"; // mlir | generic
};

struct EvalOptions {
  std::string model;
  std::string prompt;
  int32_t numTokens = 64;
  uint32_t ctx = 0; // 0: the model's declared context
  int32_t showTop = 0;
  bool noBos = false;
  SamplerOptions sampler;
};

struct PplOptions {
  std::string model;
  std::string text;
  std::string compare;
  uint32_t ctx = 0;
  size_t chunks = 0;
};

// Each returns the process exit code; errors go to stderr as one line.
int runImport(const ImportOptions &opts);
int runEval(const EvalOptions &opts);
int runPpl(const PplOptions &opts);

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_COMMANDS_H
