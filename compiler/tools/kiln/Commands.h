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
  std::string kv = "f32";
  SamplerOptions sampler;
};

struct PplOptions {
  std::string model;
  std::string text;
  std::string compare;
  uint32_t ctx = 0;
  size_t chunks = 0;
  std::string kv = "f32";
};

struct SynthOptions {
  std::string output;
  std::string arch = "llama";
  std::string type = "f32";
  uint32_t dim = 64, layers = 2, heads = 4, kvHeads = 2, ffn = 96, vocab = 320, ctx = 64;
  float ropeTheta = 10000.0f;
  uint64_t seed = 1;
  bool tied = false;
};

struct CompileOptions {
  std::string model;
  std::string output;
  std::string target = "host";
  std::string weights = "f32";  // f32 | f16 | q8_0
  std::string emit = "artifact"; // kiln | lowered | llvm | obj | artifact
  uint32_t ctx = 0;              // 0: the model's declared context
  uint32_t maxBatch = 0;         // 0: min(128, ctx)
};

struct InspectOptions {
  std::string artifact;
};

// Each returns the process exit code; errors go to stderr as one line.
int runImport(const ImportOptions &opts);
int runEval(const EvalOptions &opts);
int runPpl(const PplOptions &opts);
int runSynth(const SynthOptions &opts);
int runCompile(const CompileOptions &opts);
int runInspect(const InspectOptions &opts);

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_COMMANDS_H
