#include "compiler/frontends/gguf/GgufAdapter.h"

#include <map>

namespace kiln::gguf {

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                               suffix) == 0;
}

WeightView viewOf(const TensorInfo &t) { return {t.name, t.type, t.dims, t.data, t.nbytes}; }

} // namespace

bool isAdapterFile(const GgufFile &f) {
  const Value *v = f.find("general.type");
  return v && v->type == ValueType::String && v->str == "adapter";
}

bool readLoraAdapter(const std::string &path, LoraAdapterFile &out, std::string &error) {
  out.file = GgufFile::open(path, error);
  if (!out.file) {
    error = "adapter '" + path + "': " + error;
    return false;
  }
  const GgufFile &f = *out.file;
  auto fail = [&](const std::string &why) {
    error = "adapter '" + path + "': " + why;
    return false;
  };
  if (!isAdapterFile(f))
    return fail("not an adapter (general.type is not \"adapter\")");
  const Value *type = f.find("adapter.type");
  if (!type || type->type != ValueType::String || type->str != "lora")
    return fail("adapter.type is not \"lora\" (kiln reads LoRA adapters only)");
  if (const Value *a = f.find("general.architecture"); a && a->type == ValueType::String)
    out.architecture = a->str;
  else
    return fail("missing general.architecture");
  if (const Value *a = f.find("adapter.lora.alpha")) {
    double alpha = 0;
    if (!a->asF64(alpha))
      return fail("adapter.lora.alpha is not a number");
    out.alpha = float(alpha);
  }
  std::map<std::string, std::pair<const TensorInfo *, const TensorInfo *>> pairs;
  for (const TensorInfo &t : f.tensors()) {
    if (endsWith(t.name, ".lora_a"))
      pairs[t.name.substr(0, t.name.size() - 7)].first = &t;
    else if (endsWith(t.name, ".lora_b"))
      pairs[t.name.substr(0, t.name.size() - 7)].second = &t;
    else
      return fail("tensor '" + t.name + "' is neither a .lora_a nor a .lora_b");
  }
  if (pairs.empty())
    return fail("it has no tensors");
  for (const auto &[target, ab] : pairs) {
    if (!ab.first || !ab.second)
      return fail("'" + target + "' has " + (ab.first ? "lora_a" : "lora_b") +
                  " but not " + (ab.first ? "lora_b" : "lora_a"));
    out.deltas.push_back({target, viewOf(*ab.first), viewOf(*ab.second)});
  }
  return true;
}

bool applyHeadFile(const std::string &path, WeightStore &store, std::string &error) {
  std::unique_ptr<GgufFile> f = GgufFile::open(path, error);
  if (!f) {
    error = "head '" + path + "': " + error;
    return false;
  }
  auto fail = [&](const std::string &why) {
    error = "head '" + path + "': " + why;
    return false;
  };
  if (f->tensors().empty())
    return fail("it has no tensors");
  for (const TensorInfo &t : f->tensors()) {
    if (t.name != "output_norm.weight" && t.name != "output.weight")
      return fail("tensor '" + t.name + "' is not part of a head (output_norm.weight, "
                  "output.weight)");
    const WeightView *w = store.find(t.name);
    if (!w)
      return fail(t.name == "output.weight"
                      ? "the model ties its output layer to the token embedding, so a head "
                        "can replace output_norm.weight only"
                      : "the model has no '" + t.name + "'");
    if (w->dims != t.dims)
      return fail("'" + t.name + "' has another shape than the model's");
    std::vector<float> values;
    if (!decodeView(viewOf(t), values, error) ||
        !replaceKeepingFormat(store, t.name, values, error))
      return fail(error);
  }
  return true;
}

} // namespace kiln::gguf
