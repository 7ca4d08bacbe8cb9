//===- ModelSession.h - a model loaded for the kiln commands --------------===//
#ifndef KILN_TOOLS_KILN_MODELSESSION_H
#define KILN_TOOLS_KILN_MODELSESSION_H

#include <memory>
#include <string>

#include "mlir/IR/MLIRContext.h"

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/eval/RefExecutor.h"
#include "compiler/frontends/gguf/GgufImport.h"
#include "compiler/frontends/hf/TextTokenizer.h"
#include "compiler/tools/kiln/ModelEdits.h"

namespace kiln::tool {

// A GGUF or ONNX model imported to kiln IR, with its tokenizer and, on request, a
// reference executor. Every step reports one line on failure.
struct ModelSession {
  mlir::MLIRContext ctx;
  gguf::ImportedModel model;
  // runtime-min's SentencePiece BPE, or (tokenizer.json only) the compiler's byte-level BPE
  std::unique_ptr<hf::TextTokenizer> tokenizer;
  // what compile writes into the artifact; model "gpt2" for byte-level (compile refuses it)
  artifact::TokenizerRecord tokenizerRecord;
  std::unique_ptr<RefExecutor> executor;

  // `tokenizerPath` ("" = the model's own): a GGUF whose tokenizer.ggml.* keys to use,
  // or a Hugging Face tokenizer.json. An ONNX model without one looks for
  // tokenizer.json beside the model.
  bool load(const std::string &path, std::string &error, const std::string &tokenizerPath = "");
  // Merges adapters and writes a head into the loaded weights (before any pass runs);
  // `applied` records each for the provenance.
  bool applyEdits(const ModelEdits &edits, std::string &error);
  std::vector<std::string> appliedEdits;
  // The first half of load: the IR and weights only (kiln import needs no tokenizer).
  bool importModel(const std::string &path, std::string &error);
  // maxCtx 0: defaultContext().
  bool prepareExecutor(uint32_t maxCtx, std::string &error, KvStorage kv = KvStorage());
  uint32_t declaredContext() const;
  // The context used without --ctx: the declared one, capped at kDefaultContextCap so a
  // 128k-context model does not plan a KV cache and RoPE tables no phone holds. Says so
  // once on stderr when it caps.
  uint32_t defaultContext() const;
  static constexpr uint32_t kDefaultContextCap = 4096;
};

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_MODELSESSION_H
