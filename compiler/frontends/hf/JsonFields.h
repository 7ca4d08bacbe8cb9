//===- JsonFields.h - what both tokenizer.json readers share --------------===//
//
// Reading a file and its tokenizer_config.json, parsing to a top-level object, and the
// one-line errors that name the JSON field ("tok.json: model.vocab: expected object, got
// array"). Internal to compiler/frontends/hf.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_HF_JSONFIELDS_H
#define KILN_FRONTENDS_HF_JSONFIELDS_H

#include <string>

#include "llvm/Support/JSON.h"

namespace kiln::hf::detail {

const char *kindName(const llvm::json::Value &v);
// `s` in quotes with control bytes as \xNN, for error messages.
std::string quote(llvm::StringRef s);
// A component's "type" ("null", "(no type)" or the JSON kind when it has none).
std::string typeOf(const llvm::json::Value *v);
// The type with a Sequence's members: "Sequence[Split, ByteLevel]".
std::string describe(const llvm::json::Value *v);

bool readFile(const std::string &path, std::string &text, std::string &error);
// tokenizer_config.json beside `path`.
std::string configPathFor(const std::string &path);
// Reads `path` and, when it exists, the tokenizer_config.json beside it ("" if absent).
bool readWithConfig(const std::string &path, std::string &text, std::string &configText,
                    std::string &configPath, std::string &error);
// Parses `text` into `holder`, which must hold an object at the top.
bool parseObject(const std::string &text, const std::string &name, llvm::json::Value &holder,
                 std::string &error);

// Base of the readers: the file names for errors and the field checks.
class FieldReader {
public:
  FieldReader(const std::string &name, const std::string &configName, std::string &error)
      : name_(name), configName_(configName), error_(error) {}

protected:
  bool fail(const std::string &field, const std::string &msg) {
    error_ = name_ + ": " + field + ": " + msg;
    return false;
  }
  bool failConfig(const std::string &field, const std::string &msg) {
    error_ = configName_ + ": " + field + ": " + msg;
    return false;
  }
  bool failType(const std::string &field, const char *want, const llvm::json::Value &got) {
    return fail(field, std::string("expected ") + want + ", got " + kindName(got));
  }
  // Optional member of `o` of the given kind; null when absent or JSON null.
  bool member(const llvm::json::Object &o, const std::string &prefix, const char *key,
              llvm::json::Value::Kind kind, const char *want, const llvm::json::Value *&out) {
    out = o.get(key);
    if (out && out->kind() == llvm::json::Value::Null)
      out = nullptr;
    if (out && out->kind() != kind)
      return failType(prefix + key, want, *out);
    return true;
  }

  std::string name_, configName_;
  std::string &error_;
};

} // namespace kiln::hf::detail

#endif // KILN_FRONTENDS_HF_JSONFIELDS_H
