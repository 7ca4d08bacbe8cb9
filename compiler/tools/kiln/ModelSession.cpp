#include "compiler/tools/kiln/ModelSession.h"

#include <cstdio>

#include <sys/stat.h>

#include "compiler/InitAll.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "compiler/frontends/gguf/GgufAdapter.h"
#include "compiler/frontends/hf/ChatTemplateConfig.h"
#include "compiler/frontends/hf/TokenizerJson.h"
#include "compiler/frontends/onnx/OnnxImport.h"

namespace kiln::tool {

namespace {

artifact::TokenizerRecord recordFromGguf(const gguf::GgufFile &f) {
  artifact::TokenizerRecord t;
  auto intKey = [&](const char *key, int32_t &out) {
    uint64_t v;
    if (const gguf::Value *x = f.find(key); x && x->asU64(v))
      out = int32_t(v);
  };
  if (const gguf::Value *v = f.find("tokenizer.ggml.tokens"))
    for (const gguf::Value &e : v->array)
      t.tokens.push_back(e.str);
  if (const gguf::Value *v = f.find("tokenizer.ggml.scores"))
    for (const gguf::Value &e : v->array)
      t.scores.push_back(float(e.f));
  if (const gguf::Value *v = f.find("tokenizer.ggml.token_type"))
    for (const gguf::Value &e : v->array)
      t.types.push_back(int32_t(e.i));
  t.bosId = 1, t.eosId = 2, t.unkId = 0; // llama.cpp's defaults for SPM
  intKey("tokenizer.ggml.bos_token_id", t.bosId);
  intKey("tokenizer.ggml.eos_token_id", t.eosId);
  intKey("tokenizer.ggml.unknown_token_id", t.unkId);
  if (const gguf::Value *v = f.find("tokenizer.ggml.add_space_prefix"))
    t.addSpacePrefix = v->u != 0;
  if (const gguf::Value *v = f.find("tokenizer.ggml.add_bos_token"))
    t.addBos = v->u != 0;
  return t;
}

bool isByteLevel(const gguf::GgufFile &f) {
  const gguf::Value *m = f.find("tokenizer.ggml.model");
  return m && m->str == "gpt2";
}

bool fileExists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

} // namespace

bool ModelSession::importModel(const std::string &path, std::string &error) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  return onnx::looksLikeOnnx(path) ? onnx::importOnnx(path, ctx, model, error)
                                   : gguf::importGguf(path, ctx, model, error);
}

bool ModelSession::load(const std::string &path, std::string &error,
                        const std::string &tokenizerPath) {
  if (!importModel(path, error))
    return false;
  const bool onnx = onnx::looksLikeOnnx(path);

  std::string tokPath = tokenizerPath;
  if (tokPath.empty() && onnx) {
    size_t slash = path.find_last_of('/');
    std::string beside = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) +
                         "tokenizer.json";
    if (!fileExists(beside)) {
      error = "'" + path + "' carries no tokenizer and there is no tokenizer.json beside it: "
              "pass --tokenizer FILE (a GGUF or a Hugging Face tokenizer.json)";
      return false;
    }
    tokPath = beside;
  }
  std::unique_ptr<gguf::Tokenizer> fromGguf;
  std::unique_ptr<gguf::GgufFile> tokFile;
  if (!tokPath.empty() && endsWith(tokPath, ".gguf")) {
    tokFile = gguf::GgufFile::open(tokPath, error);
    if (!tokFile)
      return false;
  }
  if (tokPath.empty() || tokFile) {
    const gguf::GgufFile &f = tokFile ? *tokFile : *model.file;
    if (isByteLevel(f)) { // one read of the 128k tokens and 280k merges, for both uses
      if (!gguf::readBpeRecord(f, tokenizerRecord, error))
        return false;
      fromGguf = gguf::Tokenizer::fromRecord(tokenizerRecord, error);
    } else {
      fromGguf = gguf::Tokenizer::fromGguf(f, error);
      tokenizerRecord = recordFromGguf(f);
    }
    if (const gguf::Value *v = f.find("tokenizer.chat_template"))
      tokenizerRecord.chatTemplateSource = v->str;
  } else {
    // SentencePiece-style or byte-level BPE, whichever the file is.
    tokenizer = hf::loadTokenizerJson(tokPath, tokenizerRecord, error);
    if (tokenizer && !hf::readChatTemplate(tokPath, tokenizerRecord.chatTemplateSource, error))
      return false;
  }
  if (fromGguf)
    tokenizer = std::make_unique<hf::RuntimeTextTokenizer>(std::move(fromGguf));
  if (!tokenizer)
    return false;
  // Fewer tokens than embedding rows is common (padded vocabularies); more would name rows
  // the model does not have.
  if (tokenizer->size() > model.config.vocabSize) {
    error = "the tokenizer has " + std::to_string(tokenizer->size()) +
            " tokens but the model's vocabulary is only " + std::to_string(model.config.vocabSize);
    tokenizer.reset();
    return false;
  }
  return true;
}

bool ModelSession::applyEdits(const ModelEdits &edits, std::string &error) {
  if (edits.empty())
    return true;
  if (!model.file) {
    error = "--adapter and --head apply to GGUF models only";
    return false;
  }
  if (!(edits.adapterScale > -1e6f && edits.adapterScale < 1e6f)) {
    error = "--adapter-scale must be a finite number of reasonable size";
    return false;
  }
  const gguf::Value *arch = model.file->find("general.architecture");
  for (const std::string &path : edits.adapters) {
    gguf::LoraAdapterFile a;
    if (!gguf::readLoraAdapter(path, a, error))
      return false;
    if (!arch || arch->str != a.architecture) {
      error = "adapter '" + path + "' is for architecture '" + a.architecture +
              "', the model is '" + (arch ? arch->str : std::string("?")) + "'";
      return false;
    }
    if (!mergeLora(model.weights, a.deltas, a.alpha, edits.adapterScale, error)) {
      error = "adapter '" + path + "': " + error;
      return false;
    }
    char scale[64];
    std::snprintf(scale, sizeof scale, "alpha=%g,scale=%g", double(a.alpha),
                  double(edits.adapterScale));
    appliedEdits.push_back("lora " + path + " [" + scale + "] tensors=" +
                           std::to_string(a.deltas.size()));
  }
  if (!edits.head.empty()) {
    if (!gguf::applyHeadFile(edits.head, model.weights, error))
      return false;
    appliedEdits.push_back("head " + edits.head);
  }
  return true;
}

uint32_t ModelSession::declaredContext() const {
  auto declared = (*model.module)->getAttrOfType<mlir::IntegerAttr>(attr::kContextLength);
  return declared ? uint32_t(declared.getInt()) : 0;
}

uint32_t ModelSession::defaultContext() const {
  const uint32_t declared = declaredContext();
  if (declared <= kDefaultContextCap)
    return declared;
  static bool said = false;
  if (!said)
    std::fprintf(stderr,
                 "kiln: note: the model declares a context of %u tokens; using %u "
                 "(--ctx N for another)\n",
                 declared, kDefaultContextCap);
  said = true;
  return kDefaultContextCap;
}

bool ModelSession::prepareExecutor(uint32_t maxCtx, std::string &error, KvStorage kv) {
  executor = RefExecutor::create(*model.module, model.weights,
                                 maxCtx ? maxCtx : defaultContext(), error, kv);
  return executor != nullptr;
}

} // namespace kiln::tool
