//===- Commands.h - the kiln driver's subcommands -------------------------===//
#ifndef KILN_TOOLS_KILN_COMMANDS_H
#define KILN_TOOLS_KILN_COMMANDS_H

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "codegen/targets/GpuRoofline.h"
#include "codegen/targets/Roofline.h"
#include "compiler/eval/Sampler.h"
#include "compiler/tools/kiln/ModelEdits.h"

namespace kiln::pipelines {
struct AppliedPass;
struct PipelineRequest;
enum class Stage;
} // namespace kiln::pipelines

namespace kiln::tool {

// Slimming flags of compile, eval and ppl (docs/slimming.md, "Pruning").
struct SlimmingFlags {
  uint32_t maxCtx = 0;     // --max-ctx N: kiln-prune-context
  std::string pruneLayers; // --prune-layers auto | L1,L2
  std::string pruneHeads;  // --prune-heads auto | N/layer | L:H,H;L:H
  double maxPplIncrease = std::numeric_limits<double>::quiet_NaN(); // percent
  std::string calib;       // --calib TEXT: calibration text
  uint32_t calibCtx = 256; // --calib-ctx: calibration chunk length
  size_t calibChunks = 0;  // --calib-chunks: 0 = every chunk
  std::string compensate = "auto"; // --compensate on | off | auto
};

// Precision flags of compile, eval and ppl (docs/precision.md); --calib, --calib-ctx and
// --calib-chunks are the slimming flags'.
struct PrecisionFlags {
  std::string precision;      // --precision source | uniform:FMT | rules:... | auto; "" = as stored
  std::string weights;        // --weights FMT: --precision uniform:FMT
  std::string bpw;            // --bpw B (auto)
  std::string maxWeightBytes; // --max-weight-bytes N (auto)
  std::string rounding = "nearest"; // --rounding nearest | weighted | gptq (--calib)
  std::string rotate = "none";      // --rotate none | residual | auto (--precision)
};

struct ImportOptions {
  std::string model;
  std::string emit = "mlir"; // mlir | generic | onnx (ONNX after folding) | raised
  std::string tokenizer;
};

struct EvalOptions {
  std::string model;
  std::string tokenizer; // --tokenizer FILE: GGUF or tokenizer.json
  std::string prompt;
  std::string promptIds; // --prompt-ids FILE: token ids instead of -p (no BOS added)
  int32_t numTokens = 64;
  uint32_t ctx = 0; // 0: the model's declared context
  int32_t showTop = 0;
  bool noBos = false;
  std::string kv = "f32";
  std::string dumpLogits; // raw f32 rows: every prompt position, then each generated step
  SamplerOptions sampler;
  SlimmingFlags slim;
  PrecisionFlags prec;
  ModelEdits edits;
};

struct TokenizeOptions {
  std::string model;
  std::string tokenizer; // --tokenizer FILE: GGUF or tokenizer.json
  std::string text;      // file
  bool noBos = false;
};

struct PplOptions {
  std::string model;
  std::string tokenizer; // --tokenizer FILE: GGUF or tokenizer.json
  std::string text;
  std::string compare;
  uint32_t ctx = 0;
  size_t chunks = 0;
  std::string kv = "f32";
  SlimmingFlags slim;
  PrecisionFlags prec;
  ModelEdits edits;
};

// kiln synth-adapter: a LoRA adapter or head file for a GGUF model.
struct SynthAdapterOptions {
  std::string base, output;
  bool head = false;
  uint32_t rank = 4;
  float alpha = 8, magnitude = 0.05f;
  uint64_t seed = 1;
  std::string targets = "attn_q,attn_v";
};

struct SynthOptions {
  std::string output;
  std::string arch = "llama";
  std::string type = "f32";
  uint32_t dim = 64, layers = 2, heads = 4, kvHeads = 2, ffn = 96, vocab = 320, ctx = 64;
  float ropeTheta = 10000.0f;
  uint64_t seed = 1;
  bool tied = false;
  uint32_t llama3RopeContext = 0; // > 0: write Llama 3 rope_freqs for this original context
  std::string tokenizer; // --tokenizer F.json: its vocabulary instead of the built-in one
};

struct CompileOptions {
  std::string model;
  std::string tokenizer; // --tokenizer FILE: GGUF or tokenizer.json
  std::string output;
  std::string target = "host";
  std::string emit = "artifact"; // kiln | lowered | llvm | obj | artifact
  std::string sign;              // --sign KEY: sign the artifact with this secret key
  std::string chatTemplate = "auto"; // --chat-template (ChatTemplateChoice.h)
  uint32_t ctx = 0;              // 0: the model's declared context
  uint32_t maxBatch = 0;         // 0: min(128, ctx)
  std::string kv = "f32";        // --kv: KV cache storage (dialects/kiln/IR/KvFormat.h)
  // all | none | auto | comma list of qkv, swiglu, norm, residual, rope. Default auto:
  // the linear fusions where the weights run on the r16 integer kernels, RoPE only
  // elsewhere (pipelines::resolveFusion; docs/fusion.md).
  std::string fusion = "auto";
  // packed (r16, or r32 for HVX: CpuTarget::packRows) | r16 | r32 | rows64 | none
  std::string layout = "packed";
  // --l2-kib: the per-core cache prefill panels are sized to; unset: the target's
  // (CpuTarget::prefillCacheKib), 0: no panels
  std::optional<uint32_t> l2Kib;
  SlimmingFlags slim;
  PrecisionFlags prec;
  bool quiet = false; // --quiet: no per-stage progress on a terminal
  ModelEdits edits;
  // --base BASE.kiln: write a module of BASE (kiln/module.h) holding the tensors the edits
  // changed and the bans, instead of a whole artifact; the other options must be BASE's.
  std::string base;
  std::string moduleName, moduleVersion;
  std::vector<std::string> bans; // --ban: token texts, words or id:N
};

struct InspectOptions {
  std::string artifact;
  std::string publicKey;   // --public-key: check the signature against this key
  std::string chip;        // --chip: also print the roofline decode estimate on this chip
  uint32_t ctx = 0;        // positions the KV read covers; 0: the artifact's max context
  double efficiency = codegen::kDefaultDecodeEfficiency;
  std::string source;      // --source: check this file's sha256 against the provenance
  std::string extractCode; // --extract-code: write the checked code section to this file
};

struct TargetsOptions {
  std::string name; // one target or chip in full; "" lists them all
  std::string file; // --file: check and print a profile that is not built in
};

// kiln predict: a Llama shape (--shape or the hyper-parameters), its formats, a chip.
struct PredictOptions {
  std::string shape;
  uint64_t dim = 0, layers = 0, heads = 0, kvHeads = 0, ffn = 0, vocab = 0;
  bool tied = false;
  std::string weights = "q4_0"; // uniform format
  std::string precision;        // uniform:F | rules:CLASS=F,... (overrides --weights)
  std::string kv = "f16";
  uint64_t ctx = 1024;          // positions the KV read covers
  std::string chip;             // "" = every SoC profile; NAME:gpu = --engine gpu
  double efficiency = codegen::kDefaultDecodeEfficiency;
  std::string engine = "cpu";   // cpu: the DRAM roofline; gpu: codegen/targets/GpuRoofline.h
  uint64_t prompt = 128;        // gpu: the prefill batch
  codegen::GpuAssumptions gpu;  // gpu: its compute share and dispatch overhead
};

// kiln thermal-sim: decode of a Llama shape on a chip's thermal model, without and with
// the governor (codegen/targets/ThermalSim.h).
struct ThermalSimOptions {
  PredictOptions model;          // --shape/dims, --weights/--precision, --kv, --ctx,
                                 // --chip (required), --efficiency
  double seconds = 300;
  uint32_t threads = 0;          // 0: every core
  std::string governor = "temp=41"; // kiln_governor_config_parse's SPEC
  std::string svg, csv, log;     // outputs; empty: not written
};

struct AnalyzeOptions {
  std::string model;
  std::string tokenizer; // --tokenizer FILE: GGUF or tokenizer.json
  std::string calib;   // calibration text
  uint32_t ctx = 256;  // chunk length
  size_t chunks = 0;   // 0: every chunk
  std::string json, svg; // outputs; empty: not written
};

// Each returns the process exit code; errors go to stderr as one line.
int runImport(const ImportOptions &opts);
// Prints "kiln: error: MESSAGE" on stderr; returns 1, every command's exit status on error.
int fail(const std::string &message);

int runEval(const EvalOptions &opts);
int runPpl(const PplOptions &opts);
int runSynth(const SynthOptions &opts);
int runSynthAdapter(const SynthAdapterOptions &opts);
// Prints the ids on stdout, then on stderr their count and whether decoding them gives
// the text back.
int runTokenize(const TokenizeOptions &opts);
int runCompile(const CompileOptions &opts);
int runInspect(const InspectOptions &opts);
// kiln keygen -o PREFIX and kiln sign ARTIFACT --key KEY (SignCommands.cpp).
int runKeygen(const std::string &prefix);
int runSign(const std::string &artifact, const std::string &secretKey);
int runAnalyze(const AnalyzeOptions &opts);
int runTargets(const TargetsOptions &opts);
int runPredict(const PredictOptions &opts);
int runThermalSim(const ThermalSimOptions &opts);

struct ModelSession;
// --weights F as --precision uniform:F (weights cleared); false with an error if both given.
bool resolveWeightsFlag(PrecisionFlags &prec, std::string &error);

// Checks the slimming and precision flags, reads and tokenises --calib where something
// measures on it, fills those parts of `request` (the caller sets fusion and the back
// half) and runs the pipeline (compiler/pipelines/Pipeline.h) on `s`'s module up to
// `stopAfter`. `records` gets every pass, measurement and decision for the provenance;
// progress goes to stderr.
bool runPasses(ModelSession &s, const SlimmingFlags &flags, const PrecisionFlags &prec,
               pipelines::PipelineRequest &request, pipelines::Stage stopAfter,
               std::vector<pipelines::AppliedPass> &records, std::string &error);

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_COMMANDS_H
