//===- ByteLevelBpe.cpp - byte-level BPE from a Hugging Face tokenizer.json -===//

#include "compiler/frontends/hf/ByteLevelBpe.h"
#include "compiler/frontends/hf/JsonFields.h"
#include "compiler/frontends/hf/TokenizerJson.h"
#include "runtime-min/src/tokenizer/tokenizer_internal.h"
#include "runtime-min/src/tokenizer/unicode_classes.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

namespace kiln::hf {
using namespace detail;
namespace {

// GPT-2's bytes_to_unicode: printable bytes map to themselves as code points, the others to
// U+0100 onwards in byte order. kByteChar[b] is the UTF-8 of byte b's character.
struct ByteMap {
  std::string byteChar[256];
  std::map<std::string, uint8_t> charByte;
  ByteMap() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      uint32_t cp = printable ? uint32_t(b) : next++;
      std::string u;
      if (cp < 0x80) {
        u += char(cp);
      } else {
        u += char(0xC0 | (cp >> 6));
        u += char(0x80 | (cp & 0x3F));
      }
      byteChar[b] = u;
      charByte[u] = uint8_t(b);
    }
  }
};
const ByteMap &byteMap() {
  static const ByteMap m;
  return m;
}

// A token's text back to bytes: every character through the byte map, or (if one is not
// in it) the text itself, as tokenizers' ByteLevel decoder does.
std::string tokenBytes(const std::string &text) {
  const ByteMap &m = byteMap();
  std::string out;
  for (size_t i = 0; i < text.size();) {
    unsigned char b = static_cast<unsigned char>(text[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
    auto it = m.charByte.find(text.substr(i, len));
    if (it == m.charByte.end())
      return text;
    out += char(it->second);
    i += len;
  }
  return out;
}

namespace json = llvm::json;

} // namespace

const char *const ByteLevelBpe::kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char *const ByteLevelBpe::kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// ---- reading ----

class ByteLevelReader : public FieldReader {
public:
  using FieldReader::FieldReader;
  bool read(const json::Object &root, const json::Object *config, ByteLevelBpe &t);

private:
  bool falseOrAbsent(const json::Object &o, const std::string &prefix, const char *key,
                     const std::string &why) {
    const json::Value *v;
    if (!member(o, prefix, key, json::Value::Boolean, "bool", v))
      return false;
    if (v && *v->getAsBoolean())
      return fail(prefix + key, "true is not supported (" + why + ")");
    return true;
  }
  int32_t idOf(const std::string &text) const {
    auto it = byText_.find(text);
    return it == byText_.end() ? -1 : it->second;
  }

  bool readPreTokenizer(const json::Object &root, ByteLevelBpe &t);
  bool checkByteLevel(const json::Object &o, const std::string &field, bool useRegex);
  bool readModel(const json::Object &model, ByteLevelBpe &t);
  bool readAddedTokens(const json::Object &root, ByteLevelBpe &t);
  bool readMerges(const json::Object &model, ByteLevelBpe &t);
  bool readPostProcessor(const json::Object &root, ByteLevelBpe &t);
  bool configToken(const json::Object &config, const char *key, int32_t &id);
  bool buildRuntime(ByteLevelBpe &t);

  std::map<int64_t, std::string> byId_;
  std::unordered_map<std::string, int32_t> byText_; // every token
};

bool ByteLevelReader::checkByteLevel(const json::Object &o, const std::string &field,
                                     bool useRegex) {
  if (o.getBoolean("add_prefix_space").value_or(true))
    return fail(field + ".add_prefix_space",
                "must be false (a space prepended to the text is not supported)");
  if (o.getBoolean("use_regex").value_or(true) != useRegex)
    return fail(field + ".use_regex",
                std::string("must be ") + (useRegex ? "true" : "false") +
                    (useRegex ? " (a lone ByteLevel pre-tokenizer splits with GPT-2's regex)"
                              : " (the Split before it already splits)"));
  return true;
}

bool ByteLevelReader::readPreTokenizer(const json::Object &root, ByteLevelBpe &t) {
  const json::Value *pre;
  if (!member(root, "", "pre_tokenizer", json::Value::Object, "object", pre))
    return false;
  const std::string want = " is not supported (byte-level BPE needs Sequence[Split(Llama 3 or "
                           "GPT-2 regex, Isolated), ByteLevel(use_regex false)], "
                           "ByteLevel(use_regex true) or Sequence[Digits(individual_digits "
                           "true), ByteLevel(use_regex true)])";
  if (!pre)
    return fail("pre_tokenizer", "null" + want);
  const json::Object &o = *pre->getAsObject();
  std::string type = typeOf(pre);
  if (type == "ByteLevel") {
    t.pattern_ = ByteLevelBpe::Pattern::Gpt2;
    return checkByteLevel(o, "pre_tokenizer", true);
  }
  const json::Array *members = type == "Sequence" ? o.getArray("pretokenizers") : nullptr;
  if (members && members->size() == 2 && typeOf(&(*members)[0]) == "Digits" &&
      typeOf(&(*members)[1]) == "ByteLevel") { // SmolLM's
    if (!(*members)[0].getAsObject()->getBoolean("individual_digits").value_or(false))
      return fail("pre_tokenizer.pretokenizers[0].individual_digits",
                  "must be true (runs of digits as one piece are not supported)");
    t.pattern_ = ByteLevelBpe::Pattern::SmolLM;
    return checkByteLevel(*(*members)[1].getAsObject(), "pre_tokenizer.pretokenizers[1]", true);
  }
  if (!members || members->size() != 2 || typeOf(&(*members)[0]) != "Split" ||
      typeOf(&(*members)[1]) != "ByteLevel")
    return fail("pre_tokenizer", describe(pre) + want);
  const json::Object &split = *(*members)[0].getAsObject();
  const json::Object *pattern = split.getObject("pattern");
  std::optional<llvm::StringRef> regex = pattern ? pattern->getString("Regex") : std::nullopt;
  if (!regex)
    return fail("pre_tokenizer.pretokenizers[0].pattern", "expected {\"Regex\": string}");
  if (*regex == ByteLevelBpe::kLlama3Regex)
    t.pattern_ = ByteLevelBpe::Pattern::Llama3;
  else if (*regex == ByteLevelBpe::kGpt2Regex)
    t.pattern_ = ByteLevelBpe::Pattern::Gpt2;
  else
    return fail("pre_tokenizer.pretokenizers[0].pattern.Regex",
                quote(*regex) + " is not supported (only Llama 3's and GPT-2's regex)");
  if (split.getString("behavior") != llvm::StringRef("Isolated"))
    return fail("pre_tokenizer.pretokenizers[0].behavior",
                quote(split.getString("behavior").value_or("(missing)")) +
                    " is not supported (only \"Isolated\")");
  if (split.getBoolean("invert").value_or(false))
    return fail("pre_tokenizer.pretokenizers[0].invert", "true is not supported");
  return checkByteLevel(*(*members)[1].getAsObject(), "pre_tokenizer.pretokenizers[1]", false);
}

bool ByteLevelReader::readModel(const json::Object &model, ByteLevelBpe &t) {
  const json::Value *v;
  if (!member(model, "model.", "type", json::Value::String, "string", v))
    return false;
  if (!v)
    return fail("model.type", "missing");
  if (*v->getAsString() != "BPE")
    return fail("model.type", quote(*v->getAsString()) +
                                  " is not supported (byte-level tokenizers need \"BPE\")");
  if (!falseOrAbsent(model, "model.", "byte_fallback",
                     "a byte-level vocabulary has every byte; byte_fallback is SentencePiece's"))
    return false;
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!member(model, "model.", key, json::Value::String, "string or null", v))
      return false;
    if (v && !v->getAsString()->empty())
      return fail(std::string("model.") + key,
                  quote(*v->getAsString()) + " is not supported");
  }
  if (!member(model, "model.", "dropout", json::Value::Number, "number or null", v))
    return false;
  if (v && *v->getAsNumber() != 0.0)
    return fail("model.dropout", "BPE dropout is not supported (it makes encoding random)");
  if (!member(model, "model.", "ignore_merges", json::Value::Boolean, "bool", v))
    return false;
  t.ignoreMerges_ = v && *v->getAsBoolean();

  const json::Value *vocabV;
  if (!member(model, "model.", "vocab", json::Value::Object, "object (text -> id)", vocabV))
    return false;
  if (!vocabV)
    return fail("model.vocab", "missing");
  t.vocab_.reserve(vocabV->getAsObject()->size());
  for (const auto &kv : *vocabV->getAsObject()) {
    std::string text = llvm::StringRef(kv.first).str();
    std::optional<int64_t> id = kv.second.getAsInteger();
    if (!id || *id < 0 || *id >= std::numeric_limits<int32_t>::max())
      return fail("model.vocab", quote(text) + ": id must be an integer in [0, 2^31-1), got " +
                                     (kv.second.kind() == json::Value::Number
                                          ? std::to_string(*kv.second.getAsNumber())
                                          : std::string(kindName(kv.second))));
    auto ins = byId_.emplace(*id, text);
    if (!ins.second)
      return fail("model.vocab", quote(std::min(text, ins.first->second)) + " and " +
                                     quote(std::max(text, ins.first->second)) + " both have id " +
                                     std::to_string(*id));
    t.vocab_.emplace(text, int32_t(*id));
  }
  if (byId_.empty())
    return fail("model.vocab", "empty");
  const ByteMap &m = byteMap();
  for (int b = 0; b < 256; ++b) {
    auto it = t.vocab_.find(m.byteChar[b]);
    if (it == t.vocab_.end()) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", b);
      return fail("model.vocab", std::string("byte ") + buf + " (" + quote(m.byteChar[b]) +
                                     ") has no token (a byte-level vocabulary needs all 256)");
    }
  }
  return true;
}

bool ByteLevelReader::readAddedTokens(const json::Object &root, ByteLevelBpe &t) {
  const json::Value *added;
  if (!member(root, "", "added_tokens", json::Value::Array, "array", added))
    return false;
  if (!added)
    return true;
  const json::Array &arr = *added->getAsArray();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string field = "added_tokens[" + std::to_string(i) + "]";
    const json::Object *o = arr[i].getAsObject();
    if (!o)
      return fail(field, std::string("expected object, got ") + kindName(arr[i]));
    std::optional<int64_t> id = o->getInteger("id");
    std::optional<llvm::StringRef> content = o->getString("content");
    if (!id || *id < 0 || *id >= std::numeric_limits<int32_t>::max())
      return fail(field + ".id", "missing or not an integer in [0, 2^31-1)");
    if (!content || content->empty())
      return fail(field + ".content", "missing, empty or not a string");
    auto ins = byId_.emplace(*id, content->str());
    if (!ins.second && ins.first->second != *content)
      return fail(field, "id " + std::to_string(*id) + " is " + quote(*content) + " here but " +
                             quote(ins.first->second) + " in model.vocab");
    for (const char *key : {"lstrip", "rstrip", "single_word"})
      if (!falseOrAbsent(*o, field + ".", key, "only exact matches of added tokens"))
        return false;
    // Special ones become control tokens (decoded to nothing), the others user-defined;
    // runtime-min cuts both out of the text before merging. With no normalizer "normalized"
    // changes nothing.
    bool special = o->getBoolean("special").value_or(false);
    t.addedType_[static_cast<int32_t>(*id)] =
        special ? KILN_TOKEN_TYPE_CONTROL : KILN_TOKEN_TYPE_USER_DEFINED;
  }
  return true;
}

bool ByteLevelReader::readMerges(const json::Object &model, ByteLevelBpe &t) {
  const json::Value *mergesV;
  if (!member(model, "model.", "merges", json::Value::Array, "array", mergesV))
    return false;
  if (!mergesV)
    return true;
  const json::Array &merges = *mergesV->getAsArray();
  if (merges.size() > std::numeric_limits<uint32_t>::max())
    return fail("model.merges", "too many");
  t.merges_.reserve(merges.size());
  auto vocabId = [&](const std::string &s) {
    auto it = t.vocab_.find(s);
    return it == t.vocab_.end() ? -1 : it->second;
  };
  for (size_t r = 0; r < merges.size(); ++r) {
    std::string field = "model.merges[" + std::to_string(r) + "]";
    std::string a, b;
    if (std::optional<llvm::StringRef> s = merges[r].getAsString()) {
      size_t sp = s->find(' ');
      if (sp == llvm::StringRef::npos || s->find(' ', sp + 1) != llvm::StringRef::npos)
        return fail(field, quote(*s) + " is not two tokens separated by one space");
      a = s->substr(0, sp).str();
      b = s->substr(sp + 1).str();
    } else if (const json::Array *pair = merges[r].getAsArray()) {
      if (pair->size() != 2 || !(*pair)[0].getAsString() || !(*pair)[1].getAsString())
        return fail(field, "expected a pair of strings");
      a = (*pair)[0].getAsString()->str();
      b = (*pair)[1].getAsString()->str();
    } else {
      return fail(field, std::string("expected string \"a b\" or pair [a, b], got ") +
                             kindName(merges[r]));
    }
    const int32_t iab = vocabId(a + b);
    for (const std::string *part : {&a, &b})
      if (vocabId(*part) < 0)
        return fail(field, quote(*part) + " is not in model.vocab");
    if (iab < 0)
      return fail(field,
                  quote(a + b) + " (" + quote(a) + " + " + quote(b) + ") is not in model.vocab");
    t.merges_.push_back(a + " " + b); // runtime-min ranks them; a repeated pair's last wins
  }
  return true;
}

bool ByteLevelReader::readPostProcessor(const json::Object &root, ByteLevelBpe &t) {
  const json::Value *post;
  if (!member(root, "", "post_processor", json::Value::Object, "object or null", post))
    return false;
  t.addBos_ = false;
  if (!post)
    return true;
  std::vector<const json::Object *> parts;
  const json::Object *o = post->getAsObject();
  if (typeOf(post) == "Sequence") {
    const json::Array *members = o->getArray("processors");
    if (!members)
      return fail("post_processor.processors", "missing or not an array");
    for (const json::Value &m : *members)
      parts.push_back(m.getAsObject());
  } else {
    parts.push_back(o);
  }
  const json::Object *tp = nullptr;
  for (const json::Object *p : parts) {
    std::optional<llvm::StringRef> type = p ? p->getString("type") : std::nullopt;
    if (type && *type == "ByteLevel")
      continue; // offsets only
    if (type && *type == "TemplateProcessing" && !tp) {
      tp = p;
      continue;
    }
    return fail("post_processor", describe(post) +
                                      " is not supported (only ByteLevel and one "
                                      "TemplateProcessing)");
  }
  if (!tp)
    return true;
  const json::Array *single = tp->getArray("single");
  if (!single)
    return fail("post_processor.single", "missing or not an array");
  if (single->empty())
    return true;
  const json::Object *first = (*single)[0].getAsObject();
  const json::Object *special = first ? first->getObject("SpecialToken") : nullptr;
  if (!special)
    return true;
  std::optional<llvm::StringRef> name = special->getString("id");
  if (!name)
    return fail("post_processor.single[0].SpecialToken.id", "missing or not a string");
  const json::Object *specials = tp->getObject("special_tokens");
  const json::Object *entry = specials ? specials->getObject(*name) : nullptr;
  const json::Array *ids = entry ? entry->getArray("ids") : nullptr;
  if (!ids)
    return fail("post_processor.special_tokens", quote(*name) + " missing or has no ids");
  if (ids->size() != 1 || !(*ids)[0].getAsInteger() || *(*ids)[0].getAsInteger() < 0 ||
      *(*ids)[0].getAsInteger() >= static_cast<int64_t>(t.tokens_.size()))
    return fail("post_processor.special_tokens", quote(*name) + " must have one id naming a token");
  t.bos_ = static_cast<int32_t>(*(*ids)[0].getAsInteger());
  t.addBos_ = true;
  return true;
}

bool ByteLevelReader::configToken(const json::Object &config, const char *key, int32_t &id) {
  const json::Value *v = config.get(key);
  if (!v)
    return true;
  if (v->kind() == json::Value::Null) {
    id = -1;
    return true;
  }
  std::optional<llvm::StringRef> text;
  if (const json::Object *o = v->getAsObject())
    text = o->getString("content");
  else
    text = v->getAsString();
  if (!text)
    return failConfig(key,
                      std::string("expected string or {\"content\": string}, got ") + kindName(*v));
  id = idOf(text->str());
  if (id < 0)
    return failConfig(key, quote(*text) + " is not a token");
  return true;
}

bool ByteLevelReader::read(const json::Object &root, const json::Object *config,
                           ByteLevelBpe &t) {
  const json::Value *v;
  if (!member(root, "", "model", json::Value::Object, "object", v))
    return false;
  if (!v)
    return fail("model", "missing");
  const json::Object &model = *v->getAsObject();
  if (!member(root, "", "normalizer", json::Value::Object, "object or null", v))
    return false;
  if (v)
    return fail("normalizer", describe(v) + " is not supported (byte-level BPE with no "
                                            "normalizer only)");
  if (!member(root, "", "decoder", json::Value::Object, "object or null", v))
    return false;
  if (typeOf(v) != "ByteLevel")
    return fail("decoder", describe(v) + " is not supported (byte-level BPE needs ByteLevel)");
  if (!readPreTokenizer(root, t) || !readModel(model, t) || !readAddedTokens(root, t))
    return false;

  // Ids 0..max, each with one text.
  const int64_t last = byId_.rbegin()->first;
  int64_t expect = 0;
  for (const auto &kv : byId_) {
    if (kv.first != expect)
      return fail("model.vocab", "id " + std::to_string(expect) +
                                     " has no token (ids must run from 0 to the highest, " +
                                     std::to_string(last) + ")");
    ++expect;
  }
  t.tokens_.reserve(byId_.size());
  byText_.reserve(byId_.size());
  for (const auto &kv : byId_) {
    auto ins = byText_.emplace(kv.second, int32_t(kv.first));
    if (!ins.second)
      return fail("added_tokens", "tokens " + std::to_string(ins.first->second) + " and " +
                                      std::to_string(kv.first) + " have the same text " +
                                      quote(kv.second));
    t.tokens_.push_back(kv.second);
  }
  t.types_.assign(t.tokens_.size(), KILN_TOKEN_TYPE_NORMAL);
  for (const auto &[id, type] : t.addedType_)
    t.types_[size_t(id)] = type;
  if (!readMerges(model, t))
    return false;

  // BOS/EOS: the template's leading special token; else none. EOS by name when present,
  // and Llama 3's end of turn.
  t.bos_ = -1;
  for (const char *eos : {"<|end_of_text|>", "<|endoftext|>"})
    if (t.eos_ < 0)
      t.eos_ = idOf(eos);
  t.eot_ = idOf("<|eot_id|>");
  if (!readPostProcessor(root, t))
    return false;
  if (config) {
    if (!configToken(*config, "bos_token", t.bos_) || !configToken(*config, "eos_token", t.eos_))
      return false;
    if (const json::Value *a = config->get("add_bos_token")) {
      if (!a->getAsBoolean())
        return failConfig("add_bos_token", std::string("expected bool, got ") + kindName(*a));
      t.addBos_ = *a->getAsBoolean();
    }
  }
  if (t.addBos_ && t.bos_ < 0)
    return fail("add_bos_token", "set, but there is no BOS token");
  return buildRuntime(t);
}

// runtime-min's byte-level BPE over what was read: it encodes and decodes.
bool ByteLevelReader::buildRuntime(ByteLevelBpe &t) {
  std::vector<const char *> texts, merges;
  std::vector<uint32_t> lens, mergeLens;
  for (const std::string &s : t.tokens_)
    texts.push_back(s.data()), lens.push_back(uint32_t(s.size()));
  for (const std::string &s : t.merges_)
    merges.push_back(s.data()), mergeLens.push_back(uint32_t(s.size()));
  kiln_vocab_desc_t d = {};
  d.n_tokens = uint32_t(texts.size());
  d.texts = texts.data();
  d.text_lens = lens.data();
  d.types = t.types_.data();
  d.bos_id = t.bos_;
  d.eos_id = t.eos_;
  d.unk_id = -1;
  d.kind = KILN_TOKENIZER_BPE;
  d.pretokenizer = ByteLevelBpe::runtimePattern(t.pattern_);
  d.ignore_merges = t.ignoreMerges_;
  d.n_merges = uint32_t(merges.size());
  d.merges = merges.data();
  d.merge_lens = mergeLens.data();
  std::string error;
  t.runtime_ = gguf::Tokenizer::fromDesc(d, t.addBos_, error);
  return t.runtime_ ? true : fail("model", error);
}

std::unique_ptr<ByteLevelBpe> ByteLevelBpe::parse(const std::string &jsonText,
                                                  const std::string &configText,
                                                  const std::string &name, std::string &error,
                                                  const std::string &configName) {
  json::Value root(nullptr), config(nullptr);
  if (!parseObject(jsonText, name, root, error))
    return nullptr;
  if (!configText.empty() && !parseObject(configText, configName, config, error))
    return nullptr;
  std::unique_ptr<ByteLevelBpe> t(new ByteLevelBpe());
  ByteLevelReader reader(name, configName, error);
  if (!reader.read(*root.getAsObject(), configText.empty() ? nullptr : config.getAsObject(), *t))
    return nullptr;
  return t;
}

std::unique_ptr<ByteLevelBpe> readByteLevelBpe(const std::string &path, std::string &error) {
  std::string text, configText, configPath;
  if (!readWithConfig(path, text, configText, configPath, error))
    return nullptr;
  return ByteLevelBpe::parse(text, configText, path, error, configPath);
}

// ---- encoding: runtime-min ----

char ByteLevelBpe::charClass(uint32_t cp) { return kiln_bpe_char_class(cp); }
const char *ByteLevelBpe::unicodeVersion() { return kiln_unicode_version; }

kiln_pretokenizer_t ByteLevelBpe::runtimePattern(Pattern p) {
  switch (p) {
  case Pattern::Llama3: return KILN_PRETOKENIZER_LLAMA3;
  case Pattern::SmolLM: return KILN_PRETOKENIZER_SMOLLM;
  default: return KILN_PRETOKENIZER_GPT2;
  }
}

const char *ByteLevelBpe::patternName(Pattern p) {
  switch (p) {
  case Pattern::Llama3: return "llama3";
  case Pattern::SmolLM: return "smollm";
  default: return "gpt2";
  }
}

std::vector<std::string> ByteLevelBpe::preTokenize(const std::string &text, Pattern pattern) {
  const kiln_pretokenizer_t pre = runtimePattern(pattern);
  std::vector<size_t> ends(text.size() + 1);
  ends.resize(kiln_bpe_split(pre, text.data(), text.size(), ends.data(), ends.size()));
  std::vector<std::string> pieces;
  size_t start = 0;
  for (size_t end : ends)
    pieces.push_back(text.substr(start, end - start)), start = end;
  return pieces;
}

std::vector<int32_t> ByteLevelBpe::encode(const std::string &text, bool addBos) const {
  return runtime_->encode(text, addBos && bos_ >= 0);
}

bool ByteLevelBpe::isSpecial(int32_t id) const {
  return id >= 0 && size_t(id) < types_.size() && types_[size_t(id)] == KILN_TOKEN_TYPE_CONTROL;
}

std::string ByteLevelBpe::decode(int32_t id) const { return runtime_->decode(id); }

std::string ByteLevelBpe::detokenize(const std::vector<int32_t> &ids, bool keepSpecial) const {
  std::string s;
  for (int32_t id : ids)
    s += keepSpecial && isSpecial(id) ? tokenBytes(tokens_[size_t(id)]) : decode(id);
  return s;
}

// ---- either kind ----

bool isByteLevelTokenizerJson(const std::string &jsonText) {
  llvm::Expected<json::Value> v = json::parse(jsonText);
  if (!v) {
    llvm::consumeError(v.takeError());
    return false;
  }
  const json::Object *root = v->getAsObject();
  if (!root)
    return false;
  for (const char *key : {"pre_tokenizer", "decoder", "post_processor"})
    if (describe(root->get(key)).find("ByteLevel") != std::string::npos)
      return true;
  return false;
}

std::unique_ptr<TextTokenizer> loadTokenizerJson(const std::string &path,
                                                 artifact::TokenizerRecord &record,
                                                 std::string &error) {
  std::string text, configText, configPath; // read once for either kind
  if (!readWithConfig(path, text, configText, configPath, error))
    return nullptr;
  record = artifact::TokenizerRecord();
  if (!isByteLevelTokenizerJson(text)) {
    if (!parseTokenizerJson(text, configText, path, record, error, configPath))
      return nullptr;
    std::unique_ptr<gguf::Tokenizer> spm = makeTokenizer(record, error);
    if (!spm)
      return nullptr;
    return std::make_unique<RuntimeTextTokenizer>(std::move(spm));
  }
  std::unique_ptr<ByteLevelBpe> bpe = ByteLevelBpe::parse(text, configText, path, error, configPath);
  if (!bpe)
    return nullptr;
  record.model = "gpt2";
  record.tokens = bpe->tokens();
  record.types = bpe->types();
  record.merges = bpe->merges();
  record.pretokenizer = ByteLevelBpe::patternName(bpe->pattern());
  record.ignoreMerges = bpe->ignoreMerges();
  record.bosId = bpe->bos();
  record.eosId = bpe->eos();
  record.eotId = bpe->eot();
  record.addBos = bpe->addBos();
  record.addSpacePrefix = false;
  return bpe;
}

} // namespace kiln::hf
