#include "compiler/frontends/hf/JsonFields.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "llvm/Support/Error.h"

namespace kiln::hf::detail {

namespace json = llvm::json;

const char *kindName(const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "bool";
  case json::Value::Number:
    return "number";
  case json::Value::String:
    return "string";
  case json::Value::Array:
    return "array";
  case json::Value::Object:
    return "object";
  }
  return "?";
}

std::string quote(llvm::StringRef s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      q += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(c));
      q += buf;
      continue;
    }
    q += c;
  }
  return q + "\"";
}

std::string typeOf(const json::Value *v) {
  if (!v || v->kind() == json::Value::Null)
    return "null";
  const json::Object *o = v->getAsObject();
  if (!o)
    return kindName(*v);
  std::optional<llvm::StringRef> type = o->getString("type");
  return type ? type->str() : std::string("(no type)");
}

std::string describe(const json::Value *v) {
  std::string s = typeOf(v);
  const json::Object *o = v ? v->getAsObject() : nullptr;
  if (s != "Sequence" || !o)
    return s;
  for (const char *key : {"normalizers", "pretokenizers", "decoders", "processors"}) {
    if (const json::Array *members = o->getArray(key)) {
      s += "[";
      for (size_t i = 0; i < members->size(); ++i)
        s += (i ? ", " : "") + describe(&(*members)[i]);
      return s + "]";
    }
  }
  return s;
}

bool readFile(const std::string &path, std::string &text, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

std::string configPathFor(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
         "tokenizer_config.json";
}

bool readWithConfig(const std::string &path, std::string &text, std::string &configText,
                    std::string &configPath, std::string &error) {
  configText.clear();
  configPath = configPathFor(path);
  if (!readFile(path, text, error))
    return false;
  return !std::ifstream(configPath) || readFile(configPath, configText, error);
}

bool parseObject(const std::string &text, const std::string &name, json::Value &holder,
                 std::string &error) {
  llvm::Expected<json::Value> v = json::parse(text);
  if (!v) {
    error = name + ": not valid JSON: " + llvm::toString(v.takeError());
    return false;
  }
  holder = std::move(*v);
  if (!holder.getAsObject()) {
    error = name + ": expected a JSON object at the top, got " + kindName(holder);
    return false;
  }
  return true;
}

} // namespace kiln::hf::detail
