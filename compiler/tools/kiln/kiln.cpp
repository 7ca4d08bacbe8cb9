//===- kiln.cpp - the kiln command-line driver -----------------------------===//
//
//   kiln import MODEL [--emit=mlir|generic]    print the kiln IR of a GGUF model
//   kiln eval MODEL --prompt P -n N            generate with the fp32 reference executor
//   kiln ppl MODEL TEXT --ctx C [--compare M]  llama.cpp-compatible perplexity
//   kiln synth -o OUT.gguf [--dim ...]         deterministic random-weight model
//   kiln tokenize MODEL TEXT [--no-bos]        token ids of a text, and whether they decode back
//   kiln compile MODEL --target T -o A.kiln    generate code + pack weights into an artifact
//   kiln inspect A.kiln [--extract-code F]     print an artifact's header and check it
//   kiln analyze MODEL --calib TEXT            layer/head importance tables, JSON, SVG
//   kiln targets [NAME] [--file F.yaml]        host targets and chip profiles
//   kiln predict --shape S --weights F         roofline decode tok/s per chip
//   kiln thermal-sim --chip C --shape S        decode on the chip's thermal model
//===----------------------------------------------------------------------===//
#include <cmath>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "dialects/kiln/IR/KvFormat.h"
#include "compiler/tools/kiln/Commands.h"

using namespace kiln::tool;

namespace {

// Slimming flags, shared by compile, eval and ppl (docs/slimming.md, "Pruning").
void addSlimmingFlags(CLI::App *cmd, SlimmingFlags &f) {
  cmd->add_option("--max-ctx", f.maxCtx,
                  "cap the context (KV cache, RoPE tables, memory plan) to N positions")
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--prune-layers", f.pruneLayers,
                  "remove decoder layers: L1,L2 or auto (--max-ppl-increase, --calib)");
  cmd->add_option("--prune-heads", f.pruneHeads,
                  "remove attention heads: L:H,H;L:H, N/layer or auto (--calib)");
  cmd->add_option("--max-ppl-increase", f.maxPplIncrease,
                  "quality budget of the auto searches: calibration PPL increase, percent")
      ->check(CLI::Validator(
          [](std::string &v) {
            double x = std::strtod(v.c_str(), nullptr);
            return std::isfinite(x) ? std::string() : "must be a finite percentage, got " + v;
          },
          "PERCENT"));
  cmd->add_option("--calib", f.calib, "calibration text the pruning decisions measure on");
  cmd->add_option("--calib-ctx", f.calibCtx, "calibration chunk length in tokens")
      ->check(CLI::Range(4u, 1u << 20));
  cmd->add_option("--calib-chunks", f.calibChunks,
                  "use at most this many calibration chunks (0 = all)");
  cmd->add_option("--compensate", f.compensate,
                  "after pruning, add the removed parts' mean calibration output as a bias: "
                  "on, off or auto (keep it when it lowers the calibration PPL)");
}

// Precision flags, shared by compile, eval and ppl (docs/precision.md). Budgets stay text
// so the search reports a bad one (negative, NaN) in one line of its own.
void addPrecisionFlags(CLI::App *cmd, PrecisionFlags &f) {
  cmd->add_option("--precision", f.precision,
                  "weight storage formats: source (compile's default: as the model file "
                  "stores them, or requantised to more bits; K-quants kept where the "
                  "target has integer kernels for them, else to q4_1/q8_0), lossless "
                  "(source with every K-quant kept), uniform:FMT, "
                  "rules:CLASS=FMT,..., map:WEIGHT=FMT,... (one format per weight, e.g. auto's "
                  "printed map) or auto (--calib, --bpw or --max-weight-bytes)");
  cmd->add_option("--weights", f.weights,
                  "one weight storage format (--precision uniform:FMT); compile without it "
                  "or --precision: each weight's source format (--precision source)")
      ->check(CLI::IsMember(
          {"f32", "f16", "q8_0", "q6_k", "q5_k", "q4_k", "q4_0", "q4_1", "q3_0"}));
  cmd->add_option("--bpw", f.bpw, "auto's budget: average bits per weight as stored");
  cmd->add_option("--max-weight-bytes", f.maxWeightBytes, "auto's budget: total weight bytes");
  cmd->add_option("--rounding", f.rounding,
                  "how q8_0/q4_0/q4_1/q3_0 weights are rounded: nearest (default), weighted "
                  "(scales searched under the calibration inputs' importance) or gptq (and "
                  "the rounding error compensated column by column); needs --calib");
  cmd->add_option("--rotate", f.rotate,
                  "none (default), residual: a randomised Hadamard rotation of the residual "
                  "stream folded into the weights before --precision rounds them (QuaRot), "
                  "or auto: both measured on --calib, the lower KLD kept; needs --precision")
      ->check(CLI::IsMember({"none", "residual", "auto"}));
}

// --kv of eval, ppl and compile: f32, f16 or k=<f32|f16|int8>,v=<f32|f16> (KvFormat.h).
CLI::Validator kvFormatCheck() {
  return CLI::Validator(
      [](std::string &v) {
        kiln::KvFormat f;
        std::string error;
        return kiln::parseKvFormat(v, f, error) ? std::string() : error;
      },
      "KV");
}

// --adapter / --adapter-scale / --head, shared by compile, eval and ppl (ModelEdits.h).
void addEditFlags(CLI::App *cmd, ModelEdits &e) {
  cmd->add_option("--adapter", e.adapters,
                  "merge a LoRA adapter (llama.cpp's GGUF adapter file) into the weights; "
                  "repeatable")
      ->check(CLI::ExistingFile);
  cmd->add_option("--adapter-scale", e.adapterScale,
                  "multiply every adapter's alpha/rank scale by this (default 1)");
  cmd->add_option("--head", e.head,
                  "a GGUF holding output_norm.weight and/or output.weight to use instead of "
                  "the model's")
      ->check(CLI::ExistingFile);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln: ahead-of-time compiler for Llama-family models on edge SoCs"};
  app.require_subcommand(1);

  ImportOptions imp;
  auto *importCmd = app.add_subcommand("import", "import a model and print its kiln IR");
  importCmd->add_option("model", imp.model, "GGUF or ONNX model file")->required();
  importCmd->add_option("--emit", imp.emit,
                        "mlir (kiln assembly), generic (generic op form); ONNX models also "
                        "onnx (the graph after constant folding) or raised (after the "
                        "raising patterns)")
      ->check(CLI::IsMember({"mlir", "kiln", "generic", "onnx", "raised"}));

  EvalOptions ev;
  auto *evalCmd = app.add_subcommand("eval", "generate text with the fp32 reference executor");
  evalCmd->add_option("model", ev.model, "GGUF or ONNX model file")->required();
  evalCmd->add_option("--tokenizer", ev.tokenizer,
                 "tokenizer of an ONNX model: a GGUF (its tokenizer.ggml.* keys) or a "
                 "Hugging Face tokenizer.json (default: tokenizer.json beside the model)");
  auto *promptOpt = evalCmd->add_option("-p,--prompt", ev.prompt, "prompt text");
  evalCmd->add_option("--prompt-ids", ev.promptIds,
                      "file of token ids (decimal, separated by spaces, commas or newlines) "
                      "to run as the prompt instead of -p; no BOS is added")
      ->excludes(promptOpt);
  evalCmd->add_option("-n,--n-predict", ev.numTokens, "tokens to generate")
      ->check(CLI::Range(0, 1 << 20));
  evalCmd->add_option("--ctx", ev.ctx, "context size (default: the model's, at most 4096)")
      ->check(CLI::Range(1u, 1u << 20));
  evalCmd->add_option("--temp", ev.sampler.temperature, "temperature; 0 = greedy")
      ->check(CLI::Range(0.0f, 100.0f));
  evalCmd->add_option("--top-k", ev.sampler.topK, "keep the k most likely tokens; 0 = all")
      ->check(CLI::Range(0, 1 << 24));
  evalCmd->add_option("--top-p", ev.sampler.topP, "nucleus probability mass")
      ->check(CLI::Range(1e-6f, 1.0f));
  evalCmd->add_option("--seed", ev.sampler.seed, "sampling seed");
  evalCmd->add_option("--show-top", ev.showTop,
                      "print the K largest logits at the last prompt position")
      ->check(CLI::Range(0, 1 << 24));
  evalCmd->add_option("--dump-logits", ev.dumpLogits,
                      "write the logits (raw little-endian f32 rows of vocab values) of "
                      "every prompt position, then of each generated token, to FILE");
  evalCmd->add_flag("--no-bos", ev.noBos, "do not start the prompt with BOS");
  evalCmd->add_option("--kv", ev.kv, "KV cache storage: f32, f16 or k=f32|f16|int8,v=f32|f16")
      ->check(kvFormatCheck());
  addSlimmingFlags(evalCmd, ev.slim);
  addPrecisionFlags(evalCmd, ev.prec);
  addEditFlags(evalCmd, ev.edits);

  PplOptions ppl;
  auto *pplCmd = app.add_subcommand("ppl", "perplexity on a text file (llama.cpp's method)");
  pplCmd->add_option("model", ppl.model, "GGUF or ONNX model file")->required();
  pplCmd->add_option("--tokenizer", ppl.tokenizer,
                 "tokenizer of an ONNX model: a GGUF (its tokenizer.ggml.* keys) or a "
                 "Hugging Face tokenizer.json (default: tokenizer.json beside the model)");
  pplCmd->add_option("text", ppl.text, "text file")->required();
  pplCmd->add_option("--ctx", ppl.ctx,
                     "chunk size in tokens (default: the model's context, at most 4096)")
      ->check(CLI::Range(4u, 1u << 20));
  pplCmd->add_option("--chunks", ppl.chunks, "score at most this many chunks (0 = all)");
  pplCmd->add_option("--kv", ppl.kv, "KV cache storage: f32, f16 or k=f32|f16|int8,v=f32|f16")
      ->check(kvFormatCheck());
  pplCmd->add_option("--compare", ppl.compare,
                     "second model: report top-1 agreement and mean KL divergence from it");
  addSlimmingFlags(pplCmd, ppl.slim);
  addPrecisionFlags(pplCmd, ppl.prec);
  addEditFlags(pplCmd, ppl.edits);

  SynthAdapterOptions sad;
  auto *synthAdapterCmd = app.add_subcommand(
      "synth-adapter", "write a deterministic random LoRA adapter (or head) for a GGUF model");
  synthAdapterCmd->add_option("base", sad.base, "the GGUF model it adapts")
      ->required()
      ->check(CLI::ExistingFile);
  synthAdapterCmd->add_option("-o,--output", sad.output, "output .gguf path")->required();
  synthAdapterCmd->add_flag("--head", sad.head,
                            "write a head (output_norm and output weights perturbed) instead");
  synthAdapterCmd->add_option("--rank", sad.rank, "LoRA rank")->check(CLI::Range(1u, 4096u));
  synthAdapterCmd->add_option("--alpha", sad.alpha, "adapter.lora.alpha (scale alpha/rank)");
  synthAdapterCmd->add_option("--targets", sad.targets,
                              "matrices to adapt: attn_q,attn_k,attn_v,attn_output,ffn_gate,"
                              "ffn_up,ffn_down,output (default attn_q,attn_v)");
  synthAdapterCmd->add_option("--magnitude", sad.magnitude,
                              "size of B's entries (adapter) or of the relative change (head)")
      ->check(CLI::Range(0.0f, 10.0f));
  synthAdapterCmd->add_option("--seed", sad.seed, "generator seed");

  SynthOptions syn;
  auto *synthCmd = app.add_subcommand("synth", "write a deterministic random-weight Llama GGUF");
  synthCmd->add_option("-o,--output", syn.output, "output .gguf path")->required();
  synthCmd->add_option("--dim", syn.dim, "embedding length")->check(CLI::Range(1u, 65536u));
  synthCmd->add_option("--layers", syn.layers, "decoder layers")->check(CLI::Range(1u, 1024u));
  synthCmd->add_option("--heads", syn.heads, "attention heads")->check(CLI::Range(1u, 1024u));
  synthCmd->add_option("--kv-heads", syn.kvHeads, "KV heads")->check(CLI::Range(1u, 1024u));
  synthCmd->add_option("--ffn", syn.ffn, "feed-forward length")->check(CLI::Range(1u, 1u << 20));
  synthCmd->add_option("--vocab", syn.vocab, "vocabulary size (>= 259)")
      ->check(CLI::Range(259u, 1u << 22));
  synthCmd->add_option("--ctx", syn.ctx, "declared context length")->check(CLI::Range(1u, 1u << 20));
  synthCmd->add_option("--rope-theta", syn.ropeTheta, "RoPE base")->check(CLI::PositiveNumber);
  synthCmd->add_option("--seed", syn.seed, "generator seed");
  synthCmd->add_option("--type", syn.type,
                       "matrix storage: f32, f16, q8_0, q4_0, q4_k, q5_k, q6_k (quantised with "
                       "ggml's algorithms), q4_k_m or q5_k_m (llama-quantize's mixes)")
      ->check(CLI::IsMember(
          {"f32", "f16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q4_k_m", "q5_k_m"}));
  synthCmd->add_flag("--tied", syn.tied, "tie the classifier to the token embedding");
  synthCmd->add_option("--tokenizer", syn.tokenizer,
                       "a tokenizer.json whose vocabulary (byte-level BPE, e.g. Llama 3's, or "
                       "SentencePiece) the model gets; its size sets --vocab")
      ->check(CLI::ExistingFile);
  synthCmd->add_option("--llama3-rope", syn.llama3RopeContext,
                       "write rope_freqs of Llama 3's RoPE scaling (factor 8, low 1, high 4) "
                       "for this original context")
      ->check(CLI::Range(1u, 1u << 20));
  synthCmd->add_option("--arch", syn.arch,
                       "general.architecture to write (other values test the importer's error)");

  TokenizeOptions tok;
  auto *tokCmd = app.add_subcommand("tokenize", "print a text file's token ids (runtime-min's "
                                                "tokenizer, as the artifact has it)");
  tokCmd->add_option("model", tok.model, "GGUF or ONNX model file")->required();
  tokCmd->add_option("text", tok.text, "text file")->required()->check(CLI::ExistingFile);
  tokCmd->add_option("--tokenizer", tok.tokenizer,
                     "GGUF or tokenizer.json to take the tokenizer from instead");
  tokCmd->add_flag("--no-bos", tok.noBos, "do not start with BOS");

  CompileOptions cmp;
  auto *compileCmd = app.add_subcommand("compile", "compile a model into a .kiln artifact");
  compileCmd->add_option("model", cmp.model, "GGUF or ONNX model file")->required();
  compileCmd->add_option("--tokenizer", cmp.tokenizer,
                 "tokenizer of an ONNX model: a GGUF (its tokenizer.ggml.* keys) or a "
                 "Hugging Face tokenizer.json (default: tokenizer.json beside the model)");
  compileCmd->add_option("-o,--output", cmp.output, "output file")->required();
  compileCmd->add_option("--target", cmp.target,
                         "host, x86-64-v3, x86-64-v3-vnni, x86-64-v4, x86-64-v4-vnni, "
                         "x86-64-v4-amx, or a chip engine: its "
                         "aarch64 cores (snapdragon-8-gen-3:cpu) or its Hexagon DSP "
                         "(snapdragon-8-gen-3:hvx, linked statically with --emit=obj); kiln "
                         "targets lists them");
  compileCmd->add_option("--emit", cmp.emit,
                         "stage to stop at: fused (kiln IR after slimming, precision, fusion), "
                         "kiln (after the memory plan), lowered (LLVM dialect), llvm, obj, "
                         "artifact")
      ->check(CLI::IsMember({"fused", "kiln", "lowered", "llvm", "obj", "artifact"}));
  compileCmd->add_option("--ctx", cmp.ctx,
                         "context the KV cache and RoPE tables hold (default: the model's, "
                         "at most 4096)")
      ->check(CLI::Range(1u, 1u << 20));
  compileCmd->add_flag("--quiet", cmp.quiet,
                       "no per-stage progress (shown only when stderr is a terminal)");
  compileCmd->add_option("--max-batch", cmp.maxBatch, "most tokens per forward call")
      ->check(CLI::Range(1u, 1u << 16));
  compileCmd->add_option("--kv", cmp.kv, "KV cache storage: f32, f16 or k=f32|f16|int8,v=f32|f16")
      ->check(kvFormatCheck());
  compileCmd->add_option("--fusion", cmp.fusion,
                         "fusions: all, none, auto (the linear fusions when every linear "
                         "is q4_0/q4_1/q8_0 on a packed layout and the linears hold at least "
                         "2^24 weights, else rope), or a comma list of "
                         "qkv, swiglu, norm, residual, rope (default: auto)");
  compileCmd->add_option("--layout", cmp.layout,
                         "weight layout: packed (int8/int4 repacked for integer dot "
                         "products in the target's row groups: r16, or r32 for HVX), r16, "
                         "r32, rows64 (plain rows, aligned stride) or none (block padding "
                         "only) (default: packed)")
      ->check(CLI::IsMember({"packed", "r16", "r32", "rows64", "none"}));
  compileCmd->add_option("--l2-kib", cmp.l2Kib,
                         "per-core cache (KiB) a prefill's activations are split into "
                         "token panels to fit; default: the chip profile's L2 (kiln "
                         "targets NAME), 0: no panels")
      ->check(CLI::Range(0u, 1u << 20));
  compileCmd->add_option("--chat-template", cmp.chatTemplate,
                         "the chat template the artifact records: auto (recognise the "
                         "model's tokenizer.chat_template), none, llama3, llama2, zephyr or "
                         "chatml")
      ->capture_default_str();
  compileCmd->add_option("--sign", cmp.sign,
                         "sign the artifact with this secret key (kiln keygen); apps that "
                         "open it with the public key refuse any other file");
  addSlimmingFlags(compileCmd, cmp.slim);
  addPrecisionFlags(compileCmd, cmp.prec);
  addEditFlags(compileCmd, cmp.edits);
  compileCmd->add_option("--base", cmp.base,
                         "write a module of this base artifact (kiln/module.h) instead of a "
                         "whole artifact: the tensors --adapter/--head change and the --ban "
                         "list; every other option must be the base's")
      ->check(CLI::ExistingFile);
  compileCmd->add_option("--module-name", cmp.moduleName,
                         "the module's name (default: the output file's stem)");
  compileCmd->add_option("--module-version", cmp.moduleVersion, "the module's version text");
  compileCmd->add_option("--ban", cmp.bans,
                         "(with --base) a safety filter: tokens the model may never produce, "
                         "given as a vocabulary entry, a word (every token spelling it, with "
                         "or without a leading space) or id:N; repeatable");

  InspectOptions ins;
  auto *inspectCmd = app.add_subcommand("inspect", "print and verify a .kiln artifact");
  inspectCmd->add_option("artifact", ins.artifact, ".kiln file")->required();
  auto *chipOpt = inspectCmd->add_option(
      "--chip", ins.chip, "also print the roofline decode estimate on this chip (kiln targets)");
  inspectCmd->add_option("--ctx", ins.ctx,
                         "positions of KV cache the estimate reads (default: the max context)")
      ->needs(chipOpt)
      ->check(CLI::Range(1u, 1u << 24));
  inspectCmd->add_option("--efficiency", ins.efficiency,
                         "share of the peak bandwidth decode reaches (docs/targets.md)")
      ->needs(chipOpt)
      ->check(CLI::Range(0.01, 1.0));
  inspectCmd->add_option("--source", ins.source,
                         "check that this model file is the one the artifact was compiled "
                         "from (its sha256 against the provenance's)");
  inspectCmd->add_option("--extract-code", ins.extractCode,
                         "write the code section (the ELF shared object runtime-min loads) "
                         "to this file, once the artifact checks out: for nm, objdump, perf");

  inspectCmd->add_option("--public-key", ins.publicKey,
                         "check the artifact's signature against this public key (kiln "
                         "keygen); a missing or wrong signature is an error");

  std::string keyPrefix;
  auto *keygenCmd = app.add_subcommand(
      "keygen", "make an Ed25519 key pair for signing artifacts: PREFIX.key and PREFIX.pub");
  keygenCmd->add_option("-o,--output", keyPrefix, "path prefix of the two files")->required();
  std::string signArtifactPath, signKey;
  auto *signCmd = app.add_subcommand("sign", "sign a .kiln artifact in place");
  signCmd->add_option("artifact", signArtifactPath, ".kiln file")->required();
  signCmd->add_option("--key", signKey, "secret key file (kiln keygen)")->required();

  TargetsOptions tgt;
  auto *targetsCmd = app.add_subcommand("targets", "list host targets and chip profiles");
  targetsCmd->add_option("name", tgt.name, "print one target or chip profile in full");
  targetsCmd->add_option("--file", tgt.file, "check and print a chip profile YAML file")
      ->excludes(targetsCmd->get_option("name"));

  PredictOptions pre;
  auto *predictCmd = app.add_subcommand(
      "predict", "roofline decode tok/s of a Llama shape on the chip profiles, no compile");
  auto *shapeOpt = predictCmd->add_option(
      "--shape", pre.shape, "llama-3.2-1b, llama-3.2-3b, llama-3.1-8b or tinyllama-1.1b");
  std::vector<CLI::Option *> dims = {
      predictCmd->add_option("--dim", pre.dim, "embedding length"),
      predictCmd->add_option("--layers", pre.layers, "decoder layers"),
      predictCmd->add_option("--heads", pre.heads, "attention heads"),
      predictCmd->add_option("--kv-heads", pre.kvHeads, "KV heads"),
      predictCmd->add_option("--ffn", pre.ffn, "feed-forward length"),
      predictCmd->add_option("--vocab", pre.vocab, "vocabulary size")};
  for (CLI::Option *d : dims) {
    d->excludes(shapeOpt)->check(CLI::Range(uint64_t(1), uint64_t(1) << 24));
    for (CLI::Option *other : dims)
      if (other != d)
        d->needs(other);
  }
  predictCmd->add_flag("--tied", pre.tied, "the classifier is the token embedding")
      ->excludes(shapeOpt);
  auto *weightsOpt =
      predictCmd->add_option("--weights", pre.weights, "one weight format (default q4_0)")
          ->check(CLI::IsMember({"f32", "f16", "q8_0", "q4_0", "q4_1"}));
  predictCmd->add_option("--precision", pre.precision,
                         "uniform:FMT or rules:CLASS=FMT,... (as kiln compile)")
      ->excludes(weightsOpt);
  predictCmd->add_option("--kv", pre.kv, "KV cache storage (default f16)")->check(kvFormatCheck());
  predictCmd->add_option("--ctx", pre.ctx, "positions of KV cache read per token (default 1024)")
      ->check(CLI::Range(uint64_t(0), uint64_t(1) << 24));
  predictCmd->add_option("--chip", pre.chip,
                         "one chip, NAME:gpu for its GPU (default: every SoC profile)");
  predictCmd->add_option("--efficiency", pre.efficiency,
                         "share of the peak bandwidth decode reaches (docs/targets.md)")
      ->check(CLI::Range(0.01, 1.0));
  predictCmd->add_option("--engine", pre.engine, "cpu (default) or gpu: kiln's Vulkan code")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  predictCmd->add_option("--prompt", pre.prompt, "gpu: prefill batch in tokens (default 128)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 20));
  predictCmd->add_option("--compute-efficiency", pre.gpu.computeEfficiency,
                         "gpu: share of the fp32 peak kiln's kernels reach (default 0.10)")
      ->check(CLI::Range(0.01, 1.0));
  predictCmd->add_option("--dispatch-us", pre.gpu.dispatchMicros,
                         "gpu: microseconds per dispatch and barrier (default 10)")
      ->check(CLI::Range(0.0, 10000.0));

  ThermalSimOptions sim;
  auto *simCmd = app.add_subcommand(
      "thermal-sim", "decode on a chip's thermal model, with and without the governor");
  simCmd->add_option("--chip", sim.model.chip, "a chip profile with a thermal: section")
      ->required();
  simCmd->add_option("--shape", sim.model.shape,
                                      "llama-3.2-1b, llama-3.2-3b, llama-3.1-8b or "
                                      "tinyllama-1.1b")
                       ->required();
  simCmd->add_option("--weights", sim.model.weights, "one weight format (default q4_0)")
      ->check(CLI::IsMember({"q8_0", "q4_0", "q4_1"}));
  simCmd->add_option("--kv", sim.model.kv, "KV cache storage (default f16)")
      ->check(kvFormatCheck());
  simCmd->add_option("--ctx", sim.model.ctx, "positions of KV cache read per token (1024)")
      ->check(CLI::Range(uint64_t(0), uint64_t(1) << 24));
  simCmd->add_option("--efficiency", sim.model.efficiency,
                     "share of the peak bandwidth decode reaches (docs/targets.md)")
      ->check(CLI::Range(0.01, 1.0));
  simCmd->add_option("--seconds", sim.seconds, "length of the session (default 300)")
      ->check(CLI::Range(1.0, 86400.0));
  simCmd->add_option("--threads", sim.threads, "threads (default: every core)")
      ->check(CLI::Range(1u, 64u));
  simCmd->add_option("--governor", sim.governor,
                     "governor SPEC as kiln-run's (default temp=41: skin ceiling)");
  simCmd->add_option("--svg", sim.svg, "write tokens/s, temperature and clock as SVG");
  simCmd->add_option("--csv", sim.csv, "write the per-second samples as CSV");
  simCmd->add_option("--log", sim.log, "write the governor's decisions");

  AnalyzeOptions ana;
  auto *analyzeCmd =
      app.add_subcommand("analyze", "layer and head importance on calibration text");
  analyzeCmd->add_option("model", ana.model, "GGUF or ONNX model file")->required();
  analyzeCmd->add_option("--tokenizer", ana.tokenizer,
                 "tokenizer of an ONNX model: a GGUF (its tokenizer.ggml.* keys) or a "
                 "Hugging Face tokenizer.json (default: tokenizer.json beside the model)");
  analyzeCmd->add_option("--calib", ana.calib, "calibration text file")->required();
  analyzeCmd->add_option("--ctx", ana.ctx, "chunk size in tokens")
      ->check(CLI::Range(4u, 1u << 20));
  analyzeCmd->add_option("--chunks", ana.chunks, "use at most this many chunks (0 = all)");
  analyzeCmd->add_option("--json", ana.json, "write the tables as JSON");
  analyzeCmd->add_option("--svg", ana.svg, "write a chart (layer bars, head heat maps)");

  CLI11_PARSE(app, argc, argv);
  if (targetsCmd->parsed())
    return runTargets(tgt);
  if (predictCmd->parsed())
    return runPredict(pre);
  if (simCmd->parsed())
    return runThermalSim(sim);
  if (analyzeCmd->parsed())
    return runAnalyze(ana);
  if (compileCmd->parsed())
    return runCompile(cmp);
  if (inspectCmd->parsed())
    return runInspect(ins);
  if (keygenCmd->parsed())
    return runKeygen(keyPrefix);
  if (signCmd->parsed())
    return runSign(signArtifactPath, signKey);
  if (synthAdapterCmd->parsed())
    return runSynthAdapter(sad);
  if (synthCmd->parsed())
    return runSynth(syn);
  if (tokCmd->parsed())
    return runTokenize(tok);
  if (importCmd->parsed())
    return runImport(imp);
  if (evalCmd->parsed())
    return runEval(ev);
  return runPpl(ppl);
}
