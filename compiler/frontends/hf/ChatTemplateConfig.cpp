#include "compiler/frontends/hf/ChatTemplateConfig.h"

#include <sys/stat.h>

#include "compiler/frontends/hf/JsonFields.h"

namespace kiln::hf {

namespace json = llvm::json;

bool readChatTemplate(const std::string &tokenizerPath, std::string &out, std::string &error) {
  out.clear();
  const std::string path = detail::configPathFor(tokenizerPath);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return true;
  std::string text;
  json::Value holder(nullptr);
  if (!detail::readFile(path, text, error) || !detail::parseObject(text, path, holder, error))
    return false;
  const json::Value *v = holder.getAsObject()->get("chat_template");
  if (!v || v->kind() == json::Value::Null)
    return true;
  if (auto s = v->getAsString()) {
    out = s->str();
    return true;
  }
  const json::Array *list = v->getAsArray();
  if (!list) {
    error = path + ": chat_template: expected string or list, got " + detail::kindName(*v);
    return false;
  }
  for (const json::Value &e : *list) {
    const json::Object *o = e.getAsObject();
    auto name = o ? o->getString("name") : std::nullopt;
    auto tmpl = o ? o->getString("template") : std::nullopt;
    if (!name || !tmpl) {
      error = path + ": chat_template: a list entry without \"name\" and \"template\" strings";
      return false;
    }
    if (*name == "default")
      out = tmpl->str();
  }
  return true;
}

} // namespace kiln::hf
