//===- GgufVocab.cpp - Llama SentencePiece vocabulary from GGUF metadata --===//

#include "compiler/frontends/gguf/GgufVocab.h"

#include <limits>
#include <unordered_map>

namespace kiln::gguf {
namespace {

constexpr const char *kModel = "tokenizer.ggml.model";
constexpr const char *kTokens = "tokenizer.ggml.tokens";
constexpr const char *kScores = "tokenizer.ggml.scores";
constexpr const char *kTypes = "tokenizer.ggml.token_type";

std::string typeName(const Value &v) {
  if (v.type != ValueType::Array)
    return valueTypeName(v.type);
  return std::string("array of ") + valueTypeName(v.elemType);
}

// An array of `elem`, or null with `error` set. `n` (when nonzero) is the length it must have.
const Value *findArray(const GgufFile &file, const char *key, ValueType elem, size_t n,
                       std::string &error) {
  const Value *v = file.find(key);
  if (!v) {
    error = std::string(key) + ": missing";
    return nullptr;
  }
  if (v->type != ValueType::Array || v->elemType != elem) {
    error = std::string(key) + ": expected array of " + valueTypeName(elem) + ", got " +
            typeName(*v);
    return nullptr;
  }
  if (n != 0 && v->array.size() != n) {
    error = std::string(key) + ": has " + std::to_string(v->array.size()) + " entries but " +
            kTokens + " has " + std::to_string(n);
    return nullptr;
  }
  return v;
}

// Optional bool key; llama.cpp's get_key insists on the stored type.
bool readBool(const GgufFile &file, const char *key, bool &out, std::string &error) {
  const Value *v = file.find(key);
  if (!v)
    return true;
  if (v->type != ValueType::Bool) {
    error = std::string(key) + ": expected bool, got " + typeName(*v);
    return false;
  }
  out = v->u != 0;
  return true;
}

// Optional u32 token id, which must name a token. Absent: `dflt`, or -1 if out of range.
bool readId(const GgufFile &file, const char *key, int32_t dflt, size_t n, int32_t &out,
            std::string &error) {
  const Value *v = file.find(key);
  if (!v) {
    out = static_cast<size_t>(dflt) < n ? dflt : -1;
    return true;
  }
  if (v->type != ValueType::U32) {
    error = std::string(key) + ": expected u32, got " + typeName(*v);
    return false;
  }
  if (v->u >= n) {
    error = std::string(key) + ": " + std::to_string(v->u) + " is out of range (the vocabulary has " +
            std::to_string(n) + " tokens)";
    return false;
  }
  out = static_cast<int32_t>(v->u);
  return true;
}

// tokenizer.ggml.token_type when present (n entries, each 0..6); `out` stays empty without.
bool readTypes(const GgufFile &file, size_t n, std::vector<int32_t> &out, std::string &error) {
  if (!file.find(kTypes))
    return true;
  const Value *v = findArray(file, kTypes, ValueType::I32, n, error);
  if (!v)
    return false;
  out.reserve(n);
  for (const Value &e : v->array) {
    if (e.i < KILN_TOKEN_TYPE_UNDEFINED || e.i > KILN_TOKEN_TYPE_BYTE) {
      error = std::string(kTypes) + ": entry " + std::to_string(out.size()) + " is " +
              std::to_string(e.i) + " (token types are 0..6)";
      return false;
    }
    out.push_back(static_cast<int32_t>(e.i));
  }
  return true;
}

} // namespace

std::unique_ptr<Tokenizer> Tokenizer::fromGguf(const GgufFile &file, std::string &error) {
  const Value *model = file.find(kModel);
  if (!model) {
    error = std::string(kModel) + ": missing";
    return nullptr;
  }
  if (model->type != ValueType::String) {
    error = std::string(kModel) + ": expected string, got " + typeName(*model);
    return nullptr;
  }
  if (model->str == "gpt2") {
    artifact::TokenizerRecord rec;
    if (!readBpeRecord(file, rec, error))
      return nullptr;
    return fromRecord(rec, error);
  }
  if (model->str != "llama") {
    error = std::string(kModel) + ": \"" + model->str +
            "\" is not supported (\"llama\", SentencePiece BPE, or \"gpt2\", byte-level BPE)";
    return nullptr;
  }

  const Value *tokens = findArray(file, kTokens, ValueType::String, 0, error);
  if (!tokens)
    return nullptr;
  const size_t n = tokens->array.size();
  if (n == 0 || n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    error = std::string(kTokens) + ": " + std::to_string(n) + " tokens (need 1 to 2^31-1)";
    return nullptr;
  }
  std::vector<const char *> texts(n);
  std::vector<uint32_t> lens(n);
  std::unordered_map<std::string, size_t> seen; // llama.cpp asserts texts are unique
  for (size_t i = 0; i < n; ++i) {
    const std::string &s = tokens->array[i].str;
    if (s.size() > std::numeric_limits<uint32_t>::max()) {
      error = std::string(kTokens) + ": token " + std::to_string(i) + " is too long";
      return nullptr;
    }
    texts[i] = s.data();
    lens[i] = static_cast<uint32_t>(s.size());
    // llama.cpp renames an empty text "[EMPTY_<i>]"; the runtime does the same.
    auto ins = seen.emplace(s.empty() ? "[EMPTY_" + std::to_string(i) + "]" : s, i);
    if (!ins.second) {
      error = std::string(kTokens) + ": token " + std::to_string(i) + " has the same text as token " +
              std::to_string(ins.first->second);
      return nullptr;
    }
  }

  std::vector<float> scores;
  if (file.find(kScores)) {
    const Value *v = findArray(file, kScores, ValueType::F32, n, error);
    if (!v)
      return nullptr;
    scores.reserve(n);
    for (const Value &e : v->array)
      scores.push_back(static_cast<float>(e.f));
  }
  std::vector<int32_t> types;
  if (!readTypes(file, n, types, error))
    return nullptr;

  kiln_vocab_desc_t desc = {};
  desc.n_tokens = static_cast<uint32_t>(n);
  desc.texts = texts.data();
  desc.text_lens = lens.data();
  desc.scores = scores.empty() ? nullptr : scores.data();
  desc.types = types.empty() ? nullptr : types.data();
  bool addSpacePrefix = true, addBos = true;
  if (!readId(file, "tokenizer.ggml.bos_token_id", 1, n, desc.bos_id, error) ||
      !readId(file, "tokenizer.ggml.eos_token_id", 2, n, desc.eos_id, error) ||
      !readId(file, "tokenizer.ggml.unknown_token_id", 0, n, desc.unk_id, error) ||
      !readBool(file, "tokenizer.ggml.add_space_prefix", addSpacePrefix, error) ||
      !readBool(file, "tokenizer.ggml.add_bos_token", addBos, error))
    return nullptr;
  desc.add_space_prefix = addSpacePrefix ? 1 : 0;
  if (addBos && desc.bos_id < 0) {
    error = "tokenizer.ggml.add_bos_token: set, but there is no BOS token";
    return nullptr;
  }
  return fromDesc(desc, addBos, error);
}

bool readBpeRecord(const GgufFile &file, artifact::TokenizerRecord &rec, std::string &error) {
  rec = artifact::TokenizerRecord();
  rec.model = "gpt2";
  const Value *tokens = findArray(file, kTokens, ValueType::String, 0, error);
  if (!tokens)
    return false;
  const size_t n = tokens->array.size();
  if (n == 0 || n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    error = std::string(kTokens) + ": " + std::to_string(n) + " tokens (need 1 to 2^31-1)";
    return false;
  }
  for (const Value &t : tokens->array)
    rec.tokens.push_back(t.str);
  if (!readTypes(file, n, rec.types, error))
    return false;
  const Value *merges = findArray(file, "tokenizer.ggml.merges", ValueType::String, 0, error);
  if (!merges)
    return false;
  for (const Value &m : merges->array)
    rec.merges.push_back(m.str);
  // llama.cpp's pre-tokenizer names: llama-bpe is Llama 3's regex with ignore_merges (and a
  // BOS by default); gpt2 is GPT-2's; smollm is GPT-2's with every digit alone (SmolLM).
  const Value *pre = file.find("tokenizer.ggml.pre");
  const std::string preName = pre && pre->type == ValueType::String ? pre->str : "";
  bool addBos = false;
  if (preName == "llama-bpe" || preName == "llama3") {
    rec.pretokenizer = "llama3", rec.ignoreMerges = true, addBos = true;
  } else if (preName == "gpt2" || preName == "default") {
    rec.pretokenizer = "gpt2";
  } else if (preName == "smollm") {
    rec.pretokenizer = "smollm";
  } else {
    error = "tokenizer.ggml.pre: \"" + preName +
            "\" is not supported (\"llama-bpe\" for Llama 3.x, \"gpt2\" or \"smollm\")";
    return false;
  }
  rec.addSpacePrefix = false;
  if (!readId(file, "tokenizer.ggml.bos_token_id", -1, n, rec.bosId, error) ||
      !readId(file, "tokenizer.ggml.eos_token_id", -1, n, rec.eosId, error) ||
      !readId(file, "tokenizer.ggml.eot_token_id", -1, n, rec.eotId, error) ||
      !readBool(file, "tokenizer.ggml.add_bos_token", addBos, error))
    return false;
  rec.unkId = -1;
  rec.addBos = addBos;
  if (addBos && rec.bosId < 0) {
    error = "tokenizer.ggml.add_bos_token: set, but there is no BOS token";
    return false;
  }
  return true;
}

std::unique_ptr<Tokenizer> Tokenizer::fromRecord(const artifact::TokenizerRecord &rec,
                                                 std::string &error) {
  const size_t n = rec.tokens.size();
  if (n == 0 || n > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
      (!rec.scores.empty() && rec.scores.size() != n) ||
      (!rec.types.empty() && rec.types.size() != n)) {
    error = "tokenizer: " + std::to_string(n) + " tokens, " + std::to_string(rec.scores.size()) +
            " scores and " + std::to_string(rec.types.size()) + " types do not fit together";
    return nullptr;
  }
  std::vector<const char *> texts(n), merges(rec.merges.size());
  std::vector<uint32_t> lens(n), mergeLens(rec.merges.size());
  for (size_t i = 0; i < n; ++i) {
    texts[i] = rec.tokens[i].data();
    lens[i] = static_cast<uint32_t>(rec.tokens[i].size());
  }
  for (size_t i = 0; i < merges.size(); ++i) {
    merges[i] = rec.merges[i].data();
    mergeLens[i] = static_cast<uint32_t>(rec.merges[i].size());
  }
  kiln_vocab_desc_t desc = {};
  desc.n_tokens = static_cast<uint32_t>(n);
  desc.texts = texts.data();
  desc.text_lens = lens.data();
  desc.scores = rec.scores.empty() ? nullptr : rec.scores.data();
  desc.types = rec.types.empty() ? nullptr : rec.types.data();
  desc.bos_id = rec.bosId;
  desc.eos_id = rec.eosId;
  desc.unk_id = rec.unkId;
  desc.add_space_prefix = rec.addSpacePrefix ? 1 : 0;
  if (rec.model == "gpt2") {
    desc.kind = KILN_TOKENIZER_BPE;
    if (rec.pretokenizer == "llama3") {
      desc.pretokenizer = KILN_PRETOKENIZER_LLAMA3;
    } else if (rec.pretokenizer == "gpt2") {
      desc.pretokenizer = KILN_PRETOKENIZER_GPT2;
    } else if (rec.pretokenizer == "smollm") {
      desc.pretokenizer = KILN_PRETOKENIZER_SMOLLM;
    } else {
      error = "tokenizer: pre-tokenizer \"" + rec.pretokenizer + "\" is not supported";
      return nullptr;
    }
    desc.ignore_merges = rec.ignoreMerges ? 1 : 0;
    desc.n_merges = static_cast<uint32_t>(merges.size());
    desc.merges = merges.data();
    desc.merge_lens = mergeLens.data();
  } else if (rec.model != "llama") {
    error = "tokenizer: model \"" + rec.model + "\" is not supported";
    return nullptr;
  }
  return fromDesc(desc, rec.addBos, error);
}

std::unique_ptr<Tokenizer> Tokenizer::fromDesc(const kiln_vocab_desc_t &desc, bool addBos,
                                               std::string &error) {
  kiln_tokenizer_t *tok = nullptr;
  kiln_status_t st = kiln_tokenizer_create(&desc, &tok);
  if (st != KILN_STATUS_OK) {
    error = std::string("tokenizer: vocabulary rejected: ") + kiln_status_message(st);
    return nullptr;
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(tok, addBos, desc.add_space_prefix != 0));
}

Tokenizer::~Tokenizer() { kiln_tokenizer_destroy(tok_); }

bool Tokenizer::encode(const std::string &text, bool addBos, std::vector<int32_t> &out,
                       std::string &error) const {
  // A first guess of one id per byte (plus BOS) is nearly always enough.
  out.resize(text.size() + 2);
  size_t n = 0;
  kiln_status_t st = kiln_tokenizer_encode(tok_, text.data(), text.size(), addBos, out.data(),
                                           out.size(), &n);
  if (st == KILN_STATUS_BUFFER_TOO_SMALL) {
    out.resize(n);
    st = kiln_tokenizer_encode(tok_, text.data(), text.size(), addBos, out.data(), out.size(), &n);
  }
  if (st != KILN_STATUS_OK) {
    out.clear();
    error = std::string("tokenizer: encode failed: ") + kiln_status_message(st);
    return false;
  }
  out.resize(n);
  return true;
}

std::vector<int32_t> Tokenizer::encode(const std::string &text, bool addBos) const {
  std::vector<int32_t> ids;
  std::string error;
  encode(text, addBos, ids, error);
  return ids;
}

std::string Tokenizer::decode(int32_t id) const {
  std::string piece(16, '\0');
  size_t n = 0;
  kiln_status_t st = kiln_tokenizer_piece(tok_, id, &piece[0], piece.size(), &n);
  if (st == KILN_STATUS_BUFFER_TOO_SMALL) {
    piece.resize(n);
    st = kiln_tokenizer_piece(tok_, id, &piece[0], piece.size(), &n);
  }
  if (st != KILN_STATUS_OK)
    return std::string();
  piece.resize(n);
  return piece;
}

std::string Tokenizer::detokenize(const std::vector<int32_t> &ids) const {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = decode(ids[i]);
    // llama.cpp's lstrip: only the first token, at most one space, even if its piece is empty.
    if (i == 0 && addSpacePrefix_ && !piece.empty() && piece[0] == ' ')
      piece.erase(0, 1);
    text += piece;
  }
  return text;
}

} // namespace kiln::gguf
