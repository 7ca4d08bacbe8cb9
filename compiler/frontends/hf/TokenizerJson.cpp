//===- TokenizerJson.cpp - Hugging Face tokenizer.json reader -------------===//

#include "compiler/frontends/hf/TokenizerJson.h"
#include "compiler/frontends/hf/JsonFields.h"

#include "kiln/tokenizer.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace kiln::hf {
using namespace detail;
namespace {

namespace json = llvm::json;

const std::string kSpace = "\xE2\x96\x81";     // U+2581, SentencePiece's space
constexpr size_t kMaxMerges = size_t(1) << 24; // ranks stay exact as f32 scores

// "<0xNN>" with upper-case hex, the form byte_fallback looks up.
bool isByteToken(const std::string &s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

bool mentionsByteLevel(const json::Value *v) {
  return v && describe(v).find("ByteLevel") != std::string::npos;
}

// One reader per call: the file name for errors and the token table as it is built.
class Reader : public FieldReader {
public:
  using FieldReader::FieldReader;

  bool read(const json::Object &root, const json::Object *config, artifact::TokenizerRecord &out);

private:
  int32_t idOf(const std::string &text) const {
    auto it = byText_.find(text);
    return it == byText_.end() ? -1 : it->second;
  }

  bool checkNotByteLevel(const json::Object &root);
  bool readModel(const json::Object &model);
  bool readAddedTokens(const json::Object &root);
  bool buildTable(artifact::TokenizerRecord &out);
  bool readMerges(const json::Object &model, artifact::TokenizerRecord &out);
  bool readSpacePrefix(const json::Object &root, const artifact::TokenizerRecord &out,
                       bool &addSpacePrefix);
  bool readPostProcessor(const json::Object &root, artifact::TokenizerRecord &out);
  bool readConfig(const json::Object &config, artifact::TokenizerRecord &out);
  bool configToken(const json::Object &config, const char *key, int32_t &id);

  std::map<int64_t, std::string> byId_; // from model.vocab and added_tokens
  std::unordered_map<std::string, int32_t> byText_;
  std::unordered_set<int64_t> special_, userDefined_;
  std::string unkText_;
};

bool Reader::checkNotByteLevel(const json::Object &root) {
  const json::Value *pre = root.get("pre_tokenizer"), *dec = root.get("decoder"),
                    *post = root.get("post_processor");
  if (!mentionsByteLevel(pre) && !mentionsByteLevel(dec) && !mentionsByteLevel(post))
    return true;
  const char *field = mentionsByteLevel(pre)   ? "pre_tokenizer"
                      : mentionsByteLevel(dec) ? "decoder"
                                               : "post_processor";
  return fail(field, "byte-level BPE tokenizers (Llama 3 style) are not supported yet (found "
                     "pre_tokenizer " +
                         describe(pre) + ", decoder " + describe(dec) +
                         "); only SentencePiece-style BPE with byte_fallback (Llama 2, TinyLlama)");
}

bool Reader::readModel(const json::Object &model) {
  const json::Value *type;
  if (!member(model, "model.", "type", json::Value::String, "string", type))
    return false;
  if (!type)
    return fail("model.type", "missing");
  if (*type->getAsString() != "BPE")
    return fail("model.type", quote(*type->getAsString()) +
                                  " is not supported (only \"BPE\" with byte_fallback, the "
                                  "SentencePiece-style BPE of Llama 2)");
  const json::Value *v;
  if (!member(model, "model.", "byte_fallback", json::Value::Boolean, "bool", v))
    return false;
  if (!v || !*v->getAsBoolean())
    return fail("model.byte_fallback", "must be true (only SentencePiece-style BPE with byte "
                                       "fallback is supported)");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!member(model, "model.", key, json::Value::String, "string or null", v))
      return false;
    if (v && !v->getAsString()->empty())
      return fail(std::string("model.") + key, quote(*v->getAsString()) +
                                                   " is not supported (SentencePiece-style "
                                                   "BPE has none)");
  }
  if (!member(model, "model.", "dropout", json::Value::Number, "number or null", v))
    return false;
  if (v && *v->getAsNumber() != 0.0)
    return fail("model.dropout", "BPE dropout is not supported (it makes encoding random)");
  if (!member(model, "model.", "unk_token", json::Value::String, "string or null", v))
    return false;
  if (v)
    unkText_ = v->getAsString()->str();

  const json::Value *vocabV;
  if (!member(model, "model.", "vocab", json::Value::Object, "object (text -> id)", vocabV))
    return false;
  if (!vocabV)
    return fail("model.vocab", "missing");
  for (const auto &kv : *vocabV->getAsObject()) {
    std::string text = llvm::StringRef(kv.first).str();
    std::optional<int64_t> id = kv.second.getAsInteger();
    if (!id || *id < 0 || *id >= std::numeric_limits<int32_t>::max())
      return fail("model.vocab", quote(text) + ": id must be an integer in [0, 2^31-1), got " +
                                     (kv.second.kind() == json::Value::Number
                                          ? std::to_string(*kv.second.getAsNumber())
                                          : std::string(kindName(kv.second))));
    auto ins = byId_.emplace(*id, text);
    if (!ins.second) // in text order: the object's iteration order is a hash order
      return fail("model.vocab", quote(std::min(text, ins.first->second)) + " and " +
                                     quote(std::max(text, ins.first->second)) + " both have id " +
                                     std::to_string(*id));
  }
  if (byId_.empty())
    return fail("model.vocab", "empty");
  return true;
}

bool Reader::readAddedTokens(const json::Object &root) {
  const json::Value *added;
  if (!member(root, "", "added_tokens", json::Value::Array, "array", added))
    return false;
  if (!added)
    return true;
  const json::Array &arr = *added->getAsArray();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string field = "added_tokens[" + std::to_string(i) + "]";
    const json::Object *t = arr[i].getAsObject();
    if (!t)
      return failType(field, "object", arr[i]);
    std::optional<int64_t> id = t->getInteger("id");
    std::optional<llvm::StringRef> content = t->getString("content");
    if (!id || *id < 0 || *id >= std::numeric_limits<int32_t>::max())
      return fail(field + ".id", "missing or not an integer in [0, 2^31-1)");
    if (!content)
      return fail(field + ".content", "missing or not a string");
    auto ins = byId_.emplace(*id, content->str());
    if (!ins.second && ins.first->second != *content)
      return fail(field, "id " + std::to_string(*id) + " is " + quote(*content) + " here but " +
                             quote(ins.first->second) + " in model.vocab");
    if (t->getBoolean("special").value_or(false))
      special_.insert(*id);
    else
      userDefined_.insert(*id);
  }
  return true;
}

bool Reader::buildTable(artifact::TokenizerRecord &out) {
  // Ids are map keys, so they are distinct; they must be exactly 0..n-1.
  const int64_t n = static_cast<int64_t>(byId_.size());
  if (byId_.rbegin()->first != n - 1) {
    int64_t expect = 0;
    for (const auto &kv : byId_) {
      if (kv.first != expect)
        break;
      ++expect;
    }
    return fail("model.vocab", "id " + std::to_string(expect) +
                                   " has no token (ids must run from 0 to the highest, " +
                                   std::to_string(byId_.rbegin()->first) + ")");
  }
  out.tokens.clear();
  out.tokens.reserve(byId_.size());
  for (const auto &kv : byId_) {
    // llama.cpp renames an empty text "[EMPTY_<id>]"; the runtime does the same.
    std::string key = kv.second.empty() ? "[EMPTY_" + std::to_string(kv.first) + "]" : kv.second;
    auto ins = byText_.emplace(key, static_cast<int32_t>(kv.first));
    if (!ins.second)
      return fail(special_.count(kv.first) || userDefined_.count(kv.first) ? "added_tokens"
                                                                           : "model.vocab",
                  "tokens " + std::to_string(ins.first->second) + " and " +
                      std::to_string(kv.first) + " have the same text " + quote(kv.second));
    out.tokens.push_back(kv.second);
  }
  return true;
}

bool Reader::readMerges(const json::Object &model, artifact::TokenizerRecord &out) {
  const json::Value *mergesV;
  if (!member(model, "model.", "merges", json::Value::Array, "array", mergesV))
    return false;
  const size_t n = out.tokens.size();
  const json::Array empty;
  const json::Array &merges = mergesV ? *mergesV->getAsArray() : empty;
  if (merges.size() > kMaxMerges)
    return fail("model.merges", std::to_string(merges.size()) +
                                    " merges (at most 2^24: ranks must stay exact f32 scores)");
  // Tokens no merge produces score below every merge (see the header).
  const float none = -static_cast<float>(merges.size());
  out.scores.assign(n, none);
  std::vector<bool> produced(n, false);
  for (size_t r = 0; r < merges.size(); ++r) {
    std::string field = "model.merges[" + std::to_string(r) + "]";
    std::string a, b;
    if (std::optional<llvm::StringRef> s = merges[r].getAsString()) {
      // tokenizers' legacy form "a b": exactly one space.
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
      return failType(field, "string \"a b\" or pair [a, b]", merges[r]);
    }
    for (const std::string *part : {&a, &b})
      if (idOf(*part) < 0)
        return fail(field, quote(*part) + " is not in model.vocab");
    int32_t t = idOf(a + b);
    if (t < 0)
      return fail(field,
                  quote(a + b) + " (" + quote(a) + " + " + quote(b) + ") is not in model.vocab");
    if (!produced[t]) {
      produced[t] = true;
      out.scores[t] = -static_cast<float>(r);
    }
  }
  return true;
}

// SentencePiece-style space handling: either the legacy normalizer
// Sequence[Prepend("▁"), Replace(" ", "▁")] or the Metaspace pre-tokenizer.
bool Reader::readSpacePrefix(const json::Object &root, const artifact::TokenizerRecord &out,
                             bool &addSpacePrefix) {
  const json::Value *norm, *pre;
  if (!member(root, "", "normalizer", json::Value::Object, "object or null", norm) ||
      !member(root, "", "pre_tokenizer", json::Value::Object, "object or null", pre))
    return false;
  bool replaces = false, prepends = false;
  if (norm) {
    std::vector<const json::Value *> parts;
    const json::Object &o = *norm->getAsObject();
    if (o.getString("type") == llvm::StringRef("Sequence")) {
      const json::Array *members = o.getArray("normalizers");
      if (!members)
        return fail("normalizer.normalizers", "missing or not an array");
      for (const json::Value &m : *members)
        parts.push_back(&m);
    } else {
      parts.push_back(norm);
    }
    for (const json::Value *p : parts) {
      const json::Object *po = p->getAsObject();
      std::string type = describe(p);
      bool ok = false;
      if (po && type == "Prepend") {
        ok = po->getString("prepend") == llvm::StringRef(kSpace);
        prepends = true;
      } else if (po && type == "Replace") {
        const json::Object *pattern = po->getObject("pattern");
        ok = pattern && pattern->getString("String") == llvm::StringRef(" ") &&
             po->getString("content") == llvm::StringRef(kSpace);
        replaces = true;
      }
      if (!ok)
        return fail("normalizer", describe(norm) + " is not supported (only Prepend(\"" + kSpace +
                                      "\") and Replace(\" \", \"" + kSpace + "\"))");
    }
  }
  if (pre) {
    const json::Object &o = *pre->getAsObject();
    if (describe(pre) != "Metaspace")
      return fail("pre_tokenizer", describe(pre) + " is not supported (only Metaspace, or none)");
    if (replaces)
      return fail("pre_tokenizer", "Metaspace after a normalizer that already replaces spaces "
                                   "is not supported");
    if (o.getString("replacement") != llvm::StringRef(kSpace))
      return fail("pre_tokenizer.replacement", std::string("must be \"") + kSpace + "\"");
    if (std::optional<llvm::StringRef> scheme = o.getString("prepend_scheme")) {
      if (*scheme == "always" || *scheme == "first")
        prepends = true;
      else if (*scheme == "never")
        prepends = false;
      else
        return fail("pre_tokenizer.prepend_scheme", quote(*scheme) + " is not always/first/never");
    } else {
      prepends = o.getBoolean("add_prefix_space").value_or(true);
    }
    // split (default true) cuts the text before every "▁", so Hugging Face never forms a
    // token with "▁" past its start; the runtime does not cut. Same ids unless there is one.
    if (o.getBoolean("split").value_or(true)) {
      for (size_t i = 0; i < out.tokens.size(); ++i)
        if (out.tokens[i].find(kSpace, 1) != std::string::npos)
          return fail("pre_tokenizer.split", "true, but token " + std::to_string(i) + " " +
                                                 quote(out.tokens[i]) + " has \"" + kSpace +
                                                 "\" past its start (not supported: the "
                                                 "runtime does not split words)");
    }
    replaces = true;
  }
  if (!replaces)
    return fail("normalizer", "neither the normalizer nor the pre_tokenizer turns spaces into \"" +
                                  kSpace + "\" (not a SentencePiece-style tokenizer)");
  addSpacePrefix = prepends;
  return true;
}

bool Reader::readPostProcessor(const json::Object &root, artifact::TokenizerRecord &out) {
  const json::Value *post;
  if (!member(root, "", "post_processor", json::Value::Object, "object or null", post))
    return false;
  out.addBos = false; // no post-processor: Hugging Face adds nothing
  if (!post)
    return true;
  const json::Object *tp = post->getAsObject();
  std::string field = "post_processor";
  if (tp->getString("type") == llvm::StringRef("Sequence")) {
    const json::Object *found = nullptr;
    if (const json::Array *members = tp->getArray("processors"))
      for (const json::Value &m : *members)
        if (m.getAsObject() &&
            m.getAsObject()->getString("type") == llvm::StringRef("TemplateProcessing"))
          found = m.getAsObject();
    if (!found)
      return fail(field, describe(post) + " has no TemplateProcessing");
    tp = found;
  } else if (tp->getString("type") != llvm::StringRef("TemplateProcessing")) {
    return fail(field, describe(post) + " is not supported (only TemplateProcessing)");
  }
  const json::Array *single = tp->getArray("single");
  if (!single)
    return fail(field + ".single", "missing or not an array");
  if (single->empty())
    return true;
  const json::Object *first = (*single)[0].getAsObject();
  const json::Object *special = first ? first->getObject("SpecialToken") : nullptr;
  if (!special)
    return true; // the text comes first: no BOS
  std::optional<llvm::StringRef> name = special->getString("id");
  if (!name)
    return fail(field + ".single[0].SpecialToken.id", "missing or not a string");
  const json::Object *specials = tp->getObject("special_tokens");
  const json::Object *entry = specials ? specials->getObject(*name) : nullptr;
  const json::Array *ids = entry ? entry->getArray("ids") : nullptr;
  if (!ids)
    return fail(field + ".special_tokens", quote(*name) + " missing or has no ids");
  if (ids->size() != 1 || !(*ids)[0].getAsInteger() || *(*ids)[0].getAsInteger() < 0 ||
      *(*ids)[0].getAsInteger() >= static_cast<int64_t>(out.tokens.size()))
    return fail(field + ".special_tokens", quote(*name) + " must have one id naming a token");
  out.bosId = static_cast<int32_t>(*(*ids)[0].getAsInteger());
  out.addBos = true;
  return true;
}

// bos_token / eos_token: a string, an AddedToken object {"content": ...}, or null (none).
bool Reader::configToken(const json::Object &config, const char *key, int32_t &id) {
  const json::Value *v = config.get(key);
  if (!v)
    return true;
  const std::string field = key;
  std::optional<llvm::StringRef> text;
  if (v->kind() == json::Value::Null) {
    id = -1;
    return true;
  }
  if (const json::Object *o = v->getAsObject())
    text = o->getString("content");
  else
    text = v->getAsString();
  if (!text)
    return failConfig(field,
                      std::string("expected string or {\"content\": string}, got ") + kindName(*v));
  id = idOf(text->str());
  if (id < 0)
    return failConfig(field, quote(*text) + " is not a token");
  return true;
}

bool Reader::readConfig(const json::Object &config, artifact::TokenizerRecord &out) {
  if (!configToken(config, "bos_token", out.bosId) || !configToken(config, "eos_token", out.eosId))
    return false;
  if (const json::Value *v = config.get("add_bos_token")) {
    if (!v->getAsBoolean())
      return failConfig("add_bos_token", std::string("expected bool, got ") + kindName(*v));
    out.addBos = *v->getAsBoolean();
  }
  return true;
}

bool Reader::read(const json::Object &root, const json::Object *config,
                  artifact::TokenizerRecord &out) {
  const json::Value *modelV;
  if (!member(root, "", "model", json::Value::Object, "object", modelV))
    return false;
  if (!modelV)
    return fail("model", "missing");
  const json::Object &model = *modelV->getAsObject();
  if (!checkNotByteLevel(root) || !readModel(model) || !readAddedTokens(root) || !buildTable(out) ||
      !readMerges(model, out))
    return false;
  bool addSpacePrefix = true;
  if (!readSpacePrefix(root, out, addSpacePrefix))
    return false;
  out.model = "llama";
  out.addSpacePrefix = addSpacePrefix;

  // Types: see the header.
  if (unkText_.empty() && idOf("<unk>") >= 0)
    unkText_ = "<unk>";
  out.unkId = unkText_.empty() ? -1 : idOf(unkText_);
  if (!unkText_.empty() && out.unkId < 0)
    return fail("model.unk_token", quote(unkText_) + " is not a token");
  out.types.assign(out.tokens.size(), KILN_TOKEN_TYPE_NORMAL);
  for (size_t i = 0; i < out.tokens.size(); ++i) {
    int32_t &t = out.types[i];
    if (static_cast<int32_t>(i) == out.unkId)
      t = KILN_TOKEN_TYPE_UNKNOWN;
    else if (special_.count(i))
      t = KILN_TOKEN_TYPE_CONTROL;
    else if (isByteToken(out.tokens[i]))
      t = KILN_TOKEN_TYPE_BYTE;
    else if (userDefined_.count(i))
      t = KILN_TOKEN_TYPE_USER_DEFINED;
  }

  out.bosId = idOf("<s>");
  out.eosId = idOf("</s>");
  if (!readPostProcessor(root, out) || (config && !readConfig(*config, out)))
    return false;
  if (out.addBos && out.bosId < 0)
    return fail("add_bos_token", "set, but there is no BOS token");
  return true;
}

} // namespace

bool parseTokenizerJson(const std::string &jsonText, const std::string &configText,
                        const std::string &name, artifact::TokenizerRecord &out, std::string &error,
                        const std::string &configName) {
  json::Value root(nullptr), config(nullptr);
  if (!parseObject(jsonText, name, root, error))
    return false;
  if (!configText.empty() && !parseObject(configText, configName, config, error))
    return false;
  out = artifact::TokenizerRecord();
  Reader reader(name, configName, error);
  return reader.read(*root.getAsObject(), configText.empty() ? nullptr : config.getAsObject(), out);
}

bool readTokenizerJson(const std::string &path, artifact::TokenizerRecord &out,
                       std::string &error) {
  std::string text, configText, configPath;
  return readWithConfig(path, text, configText, configPath, error) &&
         parseTokenizerJson(text, configText, path, out, error, configPath);
}

std::unique_ptr<gguf::Tokenizer> makeTokenizer(const artifact::TokenizerRecord &rec,
                                               std::string &error) {
  return gguf::Tokenizer::fromRecord(rec, error);
}

} // namespace kiln::hf
