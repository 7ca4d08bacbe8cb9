#include "compiler/tools/kiln/Commands.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include "compiler/eval/Perplexity.h"
#include "compiler/frontends/onnx/OnnxImport.h"
#include "compiler/pipelines/Pipeline.h"
#include "compiler/tools/kiln/ModelSession.h"
#include "models/weights/DerivedWeights.h"
#include "passes/precision/PrecisionSpec.h"
#include "compiler/frontends/gguf/SyntheticGguf.h"
#include "compiler/frontends/hf/ChatTemplateConfig.h"
#include "compiler/frontends/hf/TextTokenizer.h"
#include "kiln/quant.h"

namespace kiln::tool {

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln: error: %s\n", message.c_str());
  return 1;
}

namespace {

// --kv was checked when the command line was parsed (kiln.cpp).
KvStorage kvStorage(const std::string &name) {
  KvFormat f;
  std::string ignored;
  parseKvFormat(name, f, ignored);
  return f;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Prints the k largest logits of a row, largest first.
void printTopLogits(const ModelSession &s, const float *row, int32_t vocab, int32_t k) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  for (int32_t i = 0; i < vocab; ++i)
    ids[size_t(i)] = i;
  k = std::min(k, vocab);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  std::fprintf(stderr, "top %d logits at the last prompt position:\n", k);
  for (int32_t i = 0; i < k; ++i)
    std::fprintf(stderr, "  %5d %-16s %.4f\n", ids[size_t(i)],
                 ("'" + s.tokenizer->decode(ids[size_t(i)]) + "'").c_str(), row[ids[size_t(i)]]);
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::stringstream buf;
  buf << in.rdbuf();
  out = buf.str();
  return true;
}

// Token ids from a text file: decimal numbers separated by spaces, commas or newlines (the
// executor checks them against the vocabulary).
bool readTokenIds(const std::string &path, std::vector<int32_t> &ids, std::string &error) {
  std::string text;
  if (!readFile(path, text)) {
    error = "cannot read '" + path + "'";
    return false;
  }
  for (char &c : text)
    if (c == ',')
      c = ' ';
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    char *end = nullptr;
    errno = 0;
    const long long v = std::strtoll(word.c_str(), &end, 10);
    if (*end != '\0' || errno || v < 0 || v > INT32_MAX) {
      error = "'" + path + "': '" + word + "' is not a token id";
      return false;
    }
    ids.push_back(int32_t(v));
  }
  return true;
}

// A tokenizer record as GGUF's tokenizer.ggml.* keys (llama.cpp's names; "llama-bpe" is
// its pre-tokenizer name for Llama 3's regex).
void writeVocabulary(models::ModelWriter &w, const artifact::TokenizerRecord &r) {
  w.addString("tokenizer.ggml.model", r.model);
  w.addStringArray("tokenizer.ggml.tokens", r.tokens);
  if (!r.scores.empty())
    w.addF32Array("tokenizer.ggml.scores", r.scores);
  if (!r.types.empty())
    w.addI32Array("tokenizer.ggml.token_type", r.types);
  if (r.model == "gpt2") {
    w.addStringArray("tokenizer.ggml.merges", r.merges);
    // llama.cpp's names: "llama3" is its llama-bpe; gpt2 and smollm are as kiln names them
    w.addString("tokenizer.ggml.pre", r.pretokenizer == "llama3" ? "llama-bpe" : r.pretokenizer);
  } else {
    w.addBool("tokenizer.ggml.add_space_prefix", r.addSpacePrefix);
  }
  const std::pair<const char *, int32_t> ids[] = {{"tokenizer.ggml.bos_token_id", r.bosId},
                                                  {"tokenizer.ggml.eos_token_id", r.eosId},
                                                  {"tokenizer.ggml.eot_token_id", r.eotId},
                                                  {"tokenizer.ggml.unknown_token_id", r.unkId}};
  for (const auto &[key, id] : ids)
    if (id >= 0)
      w.addU32(key, uint32_t(id));
  w.addBool("tokenizer.ggml.add_bos_token", r.addBos);
  if (!r.chatTemplateSource.empty()) // as llama.cpp's converter takes it from the config
    w.addString("tokenizer.chat_template", r.chatTemplateSource);
}

bool anyPruning(const SlimmingFlags &f) {
  return !f.pruneLayers.empty() || !f.pruneHeads.empty();
}

// The context eval/ppl run with: --ctx, else --max-ctx, else the default one. Both
// given must agree for eval (it generates in that context); ppl's chunks must fit the cap.
bool runContext(const ModelSession &s, uint32_t ctx, const SlimmingFlags &f, bool chunks,
                uint32_t &out, std::string &error) {
  out = ctx ? ctx : f.maxCtx ? f.maxCtx : s.defaultContext();
  if (ctx && f.maxCtx && (chunks ? ctx > f.maxCtx : ctx != f.maxCtx)) {
    error = "--ctx " + std::to_string(ctx) + (chunks ? " exceeds" : " disagrees with") +
            " --max-ctx " + std::to_string(f.maxCtx);
    return false;
  }
  return true;
}

} // namespace

bool resolveWeightsFlag(PrecisionFlags &prec, std::string &error) {
  if (prec.weights.empty())
    return true;
  if (!prec.precision.empty()) {
    error = "give --weights or --precision, not both (--weights F is --precision uniform:F)";
    return false;
  }
  prec.precision = "uniform:" + prec.weights;
  prec.weights.clear();
  return true;
}

bool runPasses(ModelSession &s, const SlimmingFlags &f, const PrecisionFlags &flags,
               pipelines::PipelineRequest &pipeline, pipelines::Stage stopAfter,
               std::vector<pipelines::AppliedPass> &records, std::string &error) {
  PrecisionFlags prec = flags;
  if (!resolveWeightsFlag(prec, error))
    return false;
  pipelines::SlimmingRequest &req = pipeline.slimming;
  req.maxCtx = f.maxCtx;
  req.layers = f.pruneLayers;
  req.heads = f.pruneHeads;
  req.maxPplIncrease = f.maxPplIncrease;
  req.compensate = f.compensate;
  req.log = [](const std::string &line) { std::fprintf(stderr, "kiln: %s\n", line.c_str()); };
  pipelines::Calibration calib;
  quant::Rounding &rounding = pipeline.rounding;
  if (!quant::parseRounding(prec.rounding, rounding)) {
    error = "--rounding: unknown method '" + prec.rounding + "' (expected nearest, weighted "
            "or gptq)";
    return false;
  }
  if (rounding != quant::Rounding::Nearest && f.calib.empty()) {
    error = "--rounding " + prec.rounding + " needs --calib TEXT (the text whose inputs it "
            "weights the rounding by)";
    return false;
  }
  if (rounding != quant::Rounding::Nearest && prec.precision.empty()) {
    error = "--rounding " + prec.rounding + " rounds the formats --precision assigns; give "
            "--precision";
    return false;
  }
  if (prec.rotate != "none" && (prec.precision.empty() || prec.precision == "source" ||
                                 prec.precision == "lossless")) {
    error = "--rotate " + prec.rotate + " rotates the weights before --precision rounds them; "
            "give --precision uniform:F, rules:, map: or auto (source and lossless would "
            "keep the rotated weights in f32)";
    return false;
  }
  pipeline.rotate = prec.rotate == "residual" ? pipelines::Rotate::Residual
                    : prec.rotate == "auto"   ? pipelines::Rotate::Auto
                                              : pipelines::Rotate::None;
  if (prec.rotate == "auto" && f.calib.empty()) {
    error = "--rotate auto needs --calib TEXT (the text it compares the two on)";
    return false;
  }
  const bool measured = anyPruning(f) || prec.precision == "auto" ||
                        rounding != quant::Rounding::Nearest || prec.rotate == "auto";
  if (!f.calib.empty() && !measured)
    std::fprintf(stderr, "kiln: warning: --calib is only used by --prune-layers/--prune-heads,"
                         " --precision auto, --rounding and --rotate auto\n");
  if (!f.calib.empty() && measured) {
    std::string text;
    if (!readFile(f.calib, text)) {
      error = "cannot read calibration text '" + f.calib + "'";
      return false;
    }
    calib.name = f.calib;
    calib.tokens = s.tokenizer->encode(text, true);
    calib.bos = s.tokenizer->bos();
    calib.ctx = f.calibCtx;
    calib.maxChunks = f.calibChunks;
    if (calib.tokens.size() < calib.ctx) {
      error = "the calibration text has " + std::to_string(calib.tokens.size()) +
              " tokens, fewer than one chunk of " + std::to_string(calib.ctx) +
              " (--calib-ctx)";
      return false;
    }
    if (anyPruning(f))
      req.calib = &calib;
  }
  pipeline.calib = f.calib.empty() ? nullptr : &calib;
  pipeline.precision.spec = prec.precision;
  pipeline.precision.bpw = prec.bpw;
  pipeline.precision.maxWeightBytes = prec.maxWeightBytes;
  pipeline.precision.rounding = prec.rounding;
  const bool ok = pipelines::runPipeline(*s.model.module, s.model.weights, pipeline, stopAfter,
                                         records, error);
  pipeline.calib = req.calib = nullptr; // the text lives only here
  return ok;
}

int runImport(const ImportOptions &opts) {
  std::string error;
  if (opts.emit == "onnx" || opts.emit == "raised") {
    if (!onnx::looksLikeOnnx(opts.model))
      return fail("--emit=" + opts.emit + " needs an ONNX model (.onnx or .onnxtxt)");
    std::string listing;
    if (!onnx::importOnnxStage(opts.model, opts.emit == "raised", listing, error))
      return fail(error);
    std::fputs(listing.c_str(), stdout);
    return 0;
  }
  // The IR needs no tokenizer: an ONNX model without one still prints.
  ModelSession s;
  if (!s.importModel(opts.model, error))
    return fail(error);
  mlir::OpPrintingFlags flags;
  if (opts.emit == "generic")
    flags.printGenericOpForm();
  (*s.model.module)->print(llvm::outs(), flags);
  llvm::outs() << "\n";
  return 0;
}

int runEval(const EvalOptions &opts) {
  ModelSession s;
  std::string error;
  if (!s.load(opts.model, error, opts.tokenizer) || !s.applyEdits(opts.edits, error))
    return fail(error);
  uint32_t ctx;
  std::vector<pipelines::AppliedPass> records;
  pipelines::PipelineRequest request;
  if (!runContext(s, opts.ctx, opts.slim, false, ctx, error) ||
      !runPasses(s, opts.slim, opts.prec, request, pipelines::Stage::Fused, records, error))
    return fail(error);
  std::vector<int32_t> prompt;
  if (opts.promptIds.empty())
    prompt = s.tokenizer->encode(opts.prompt, !opts.noBos);
  else if (!readTokenIds(opts.promptIds, prompt, error))
    return fail(error);
  if (prompt.empty())
    return fail("the prompt is empty and --no-bos leaves nothing to start from");
  if (prompt.size() + size_t(opts.numTokens) > ctx)
    return fail("prompt (" + std::to_string(prompt.size()) + " tokens) + " +
                std::to_string(opts.numTokens) + " generated exceed the context of " +
                std::to_string(ctx) + " (set --ctx)");
  if (!s.prepareExecutor(ctx, error, kvStorage(opts.kv)))
    return fail(error);
  const int32_t vocab = int32_t(s.executor->vocabSize());

  auto t0 = std::chrono::steady_clock::now();
  Matrix logits;
  if (!s.executor->forward(prompt, 0, logits, error))
    return fail(error);
  double prefillSeconds = secondsSince(t0);
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> dump(nullptr, std::fclose);
  if (!opts.dumpLogits.empty()) {
    dump.reset(std::fopen(opts.dumpLogits.c_str(), "wb"));
    if (!dump)
      return fail("cannot write '" + opts.dumpLogits + "'");
  }
  auto dumpRows = [&](const Matrix &m) {
    for (Eigen::Index r = 0; dump && r < m.rows(); ++r)
      std::fwrite(m.row(r).data(), sizeof(float), size_t(vocab), dump.get());
  };
  dumpRows(logits);
  if (opts.showTop > 0)
    printTopLogits(s, logits.row(logits.rows() - 1).data(), vocab, opts.showTop);

  std::fputs(opts.prompt.c_str(), stdout);
  std::fflush(stdout);
  Sampler sampler(opts.sampler);
  uint32_t pos = uint32_t(prompt.size());
  int32_t generated = 0;
  auto t1 = std::chrono::steady_clock::now();
  while (generated < opts.numTokens) {
    int32_t next = sampler.sample(logits.row(logits.rows() - 1).data(), vocab);
    if (next == s.tokenizer->eos() || next == s.tokenizerRecord.eotId)
      break; // end of text, or of a turn (Llama 3's <|eot_id|>)
    const std::string piece = s.tokenizer->decode(next);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (++generated == opts.numTokens)
      break; // the last token needs no forward pass
    if (!s.executor->forward({next}, pos++, logits, error))
      return fail(error);
    dumpRows(logits);
  }
  std::fputs("\n", stdout);
  double decodeSeconds = secondsSince(t1);
  std::fprintf(stderr, "prefill: %zu tokens in %.3f s; decode: %d tokens in %.3f s (%.1f tok/s)\n",
               prompt.size(), prefillSeconds, generated, decodeSeconds, decodeSeconds > 0 ? generated / decodeSeconds : 0.0);
  return 0;
}

int runPpl(const PplOptions &opts) {
  std::ifstream in(opts.text, std::ios::binary);
  if (!in)
    return fail("cannot read text file '" + opts.text + "'");
  std::stringstream buf;
  buf << in.rdbuf();

  ModelSession s;
  std::string error;
  if (!s.load(opts.model, error, opts.tokenizer) || !s.applyEdits(opts.edits, error))
    return fail(error);
  uint32_t ctx;
  std::vector<pipelines::AppliedPass> records;
  pipelines::PipelineRequest request;
  if (!runContext(s, opts.ctx, opts.slim, true, ctx, error) ||
      !runPasses(s, opts.slim, opts.prec, request, pipelines::Stage::Fused, records, error))
    return fail(error);
  if (ctx > s.declaredContext())
    std::fprintf(stderr, "kiln: warning: --ctx %u exceeds the model's declared context %u\n",
                 ctx, s.declaredContext());
  if (!s.prepareExecutor(ctx, error, kvStorage(opts.kv)))
    return fail(error);

  ModelSession cmp;
  if (!opts.compare.empty()) {
    if (!cmp.load(opts.compare, error, opts.tokenizer) || !cmp.prepareExecutor(ctx, error, kvStorage(opts.kv)))
      return fail("comparison model: " + error);
  }

  std::vector<int32_t> tokens = s.tokenizer->encode(buf.str(), true);
  std::fprintf(stderr, "%s: %zu tokens, %zu chunks of %u\n", opts.text.c_str(), tokens.size(),
               tokens.size() / ctx, ctx);
  PerplexityResult r;
  auto t0 = std::chrono::steady_clock::now();
  bool ok = perplexity(*s.executor, cmp.executor.get(), tokens, s.tokenizer->bos(), ctx,
                       opts.chunks, r, error, [](size_t c, double p) {
                         std::fprintf(stderr, "[%zu]%.4f ", c + 1, p);
                       });
  std::fprintf(stderr, "\n");
  if (!ok)
    return fail(error);
  std::printf("chunks: %zu (ctx %u), scored tokens: %zu, %.2f s\n", r.chunks, ctx, r.scored,
              secondsSince(t0));
  std::printf("PPL = %.4f +/- %.4f\n", r.ppl, r.pplStderr);
  std::printf("top-1 accuracy = %.4f\n", r.top1Accuracy);
  if (!opts.compare.empty()) {
    std::printf("compare PPL = %.4f\n", r.comparePpl);
    std::printf("mean KLD = %.6f\n", r.meanKld);
    std::printf("mean KLD (compare || model) = %.6f\n", r.meanKldReverse);
    std::printf("top-1 agreement = %.4f\n", r.top1Agreement);
  }
  return 0;
}

int runTokenize(const TokenizeOptions &opts) {
  ModelSession s;
  std::string error, text;
  if (!readFile(opts.text, text))
    return fail("cannot read '" + opts.text + "'");
  if (!s.load(opts.model, error, opts.tokenizer))
    return fail(error);
  if (!opts.noBos && s.tokenizer->bos() < 0)
    return fail("the tokenizer has no BOS token: pass --no-bos");
  std::vector<int32_t> ids = s.tokenizer->encode(text, !opts.noBos);
  std::string line, back;
  for (size_t i = 0; i < ids.size(); ++i) {
    line += (i ? " " : "") + std::to_string(ids[i]);
    back += s.tokenizer->decode(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  size_t at = 0;
  while (at < back.size() && at < text.size() && back[at] == text[at])
    ++at;
  if (back == text)
    std::fprintf(stderr, "%zu tokens; they decode to the text exactly (%zu bytes)\n",
                 ids.size(), text.size());
  else
    std::fprintf(stderr, "%zu tokens; decoded, they differ from the text at byte %zu\n",
                 ids.size(), at);
  return 0;
}

int runSynth(const SynthOptions &opts) {
  llama::SyntheticOptions o;
  llama::LlamaConfig &c = o.config;
  c.vocabSize = opts.vocab;
  c.dim = opts.dim;
  c.numLayers = opts.layers;
  c.numHeads = opts.heads;
  c.numKvHeads = opts.kvHeads;
  c.headDim = opts.heads ? opts.dim / opts.heads : 0;
  c.ffnDim = opts.ffn;
  c.contextLength = opts.ctx;
  c.ropeDims = c.headDim;
  c.ropeTheta = opts.ropeTheta;
  c.tiedOutput = opts.tied;
  if (opts.llama3RopeContext) {
    llama::Llama3RopeScaling scaling;
    scaling.originalContext = opts.llama3RopeContext;
    c.ropeFreqFactors = llama::llama3RopeFreqFactors(c.ropeTheta, c.ropeDims, scaling);
  }
  if (!opts.tokenizer.empty()) {
    auto record = std::make_shared<artifact::TokenizerRecord>();
    std::string error;
    if (!hf::loadTokenizerJson(opts.tokenizer, *record, error) ||
        !hf::readChatTemplate(opts.tokenizer, record->chatTemplateSource, error))
      return fail(error);
    c.vocabSize = uint32_t(record->tokens.size());
    o.vocabulary = [record](models::ModelWriter &w) { writeVocabulary(w, *record); };
  }
  o.seed = opts.seed;
  if (opts.type == "q4_k_m" || opts.type == "q5_k_m")
    o.kMixBase = opts.type == "q4_k_m" ? KILN_GGML_TYPE_Q4_K : KILN_GGML_TYPE_Q5_K;
  else if (!precision::parseFormat(opts.type, o.weightType))
    return fail("unknown synthetic weight type '" + opts.type + "'");
  o.architecture = opts.arch;
  std::string error;
  if (!gguf::writeSyntheticLlama(o, opts.output, error))
    return fail(error);
  return 0;
}

int runSynthAdapter(const SynthAdapterOptions &opts) {
  llama::SyntheticAdapterOptions o;
  o.head = opts.head;
  o.rank = opts.rank;
  o.alpha = opts.alpha;
  o.magnitude = opts.magnitude;
  o.seed = opts.seed;
  o.targets.clear();
  for (size_t at = 0; at <= opts.targets.size();) {
    size_t comma = opts.targets.find(',', at);
    if (comma == std::string::npos)
      comma = opts.targets.size();
    if (comma > at)
      o.targets.push_back(opts.targets.substr(at, comma - at));
    at = comma + 1;
  }
  std::string error;
  if (!gguf::writeSyntheticAdapter(opts.base, o, opts.output, error))
    return fail(error);
  return 0;
}

} // namespace kiln::tool
