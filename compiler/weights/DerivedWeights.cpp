#include "compiler/weights/DerivedWeights.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace kiln {

void addDerivedWeight(ModuleOp module, const std::string &name, DictionaryAttr recipe) {
  Builder b(module.getContext());
  NamedAttrList entries;
  if (auto old = module->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr))
    entries.append(old.getValue());
  entries.set(b.getStringAttr(name), recipe);
  module->setAttr(kDerivedWeightsAttr, entries.getDictionary(module.getContext()));
}

namespace {

bool materializeOne(const std::string &name, DictionaryAttr recipe, DictionaryAttr all,
                    WeightStore &store, int depth, std::string &error) {
  if (store.find(name) && !all.get(name))
    return true;
  auto op = recipe.getAs<StringAttr>("op");
  // Inline data (small vectors such as compensation biases): no source.
  if (op && op.getValue() == "values") {
    auto values = recipe.getAs<DenseF32ArrayAttr>("values");
    if (!values || values.empty()) {
      error = "derived weight '" + name + "': values needs a non-empty array<f32> 'values'";
      return false;
    }
    std::vector<float> out(values.asArrayRef().begin(), values.asArrayRef().end());
    std::vector<uint64_t> dims{uint64_t(out.size())};
    store.addOwnedF32(name, std::move(dims), std::move(out));
    return true;
  }
  auto source = recipe.getAs<StringAttr>("source");
  if (!source || !op) {
    error = "derived weight '" + name + "' needs a source and an op";
    return false;
  }
  // A source that is itself derived is materialised first (recipes chain).
  if (auto inner = all.getAs<DictionaryAttr>(source.getValue())) {
    if (depth > 16) {
      error = "derived weight '" + name + "' has a recipe cycle";
      return false;
    }
    if (!materializeOne(source.str(), inner, all, store, depth + 1, error))
      return false;
  }
  const WeightView *src = store.find(source.str());
  if (!src) {
    error = "derived weight '" + name + "': source '" + source.str() + "' does not exist";
    return false;
  }
  std::vector<float> data;
  if (!store.dequantize(source.str(), data, error))
    return false;
  const uint64_t cols = src->rowLength(), rows = src->numRows();
  std::vector<int64_t> idx;
  if (auto indices = recipe.getAs<DenseI64ArrayAttr>("indices"))
    idx.assign(indices.asArrayRef().begin(), indices.asArrayRef().end());
  auto outOfRange = [&](uint64_t limit) {
    for (int64_t i : idx)
      if (i < 0 || uint64_t(i) >= limit) {
        error = "derived weight '" + name + "': index " + std::to_string(i) +
                " is out of range [0, " + std::to_string(limit) + ")";
        return true;
      }
    return false;
  };
  std::vector<float> out;
  std::vector<uint64_t> dims;
  if (op.getValue() == "select_rows") {
    if (outOfRange(rows))
      return false;
    for (int64_t r : idx)
      out.insert(out.end(), data.begin() + r * cols, data.begin() + (r + 1) * cols);
    dims = {cols, uint64_t(idx.size())};
  } else if (op.getValue() == "select_cols") {
    if (outOfRange(cols))
      return false;
    for (uint64_t r = 0; r < rows; ++r)
      for (int64_t c : idx)
        out.push_back(data[r * cols + c]);
    dims = {uint64_t(idx.size()), rows};
  } else if (op.getValue() == "scale") {
    auto factor = recipe.getAs<FloatAttr>("factor");
    if (!factor) {
      error = "derived weight '" + name + "': scale needs a factor";
      return false;
    }
    out = data;
    for (float &x : out)
      x *= float(factor.getValueAsDouble());
    dims = src->dims;
  } else {
    error = "derived weight '" + name + "': unknown op '" + op.str() + "'";
    return false;
  }
  if (dims.size() == 2 && dims[1] == 1 && src->dims.size() == 1)
    dims = {dims[0]};
  store.addOwnedF32(name, std::move(dims), std::move(out));
  return true;
}

} // namespace

bool materializeDerivedWeights(ModuleOp module, WeightStore &store, std::string &error) {
  auto all = module->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr);
  if (!all)
    return true;
  for (NamedAttribute entry : all) {
    auto recipe = dyn_cast<DictionaryAttr>(entry.getValue());
    if (!recipe) {
      error = "derived weight '" + entry.getName().str() + "' has no recipe dictionary";
      return false;
    }
    if (!materializeOne(entry.getName().str(), recipe, all, store, 0, error))
      return false;
  }
  return true;
}

} // namespace kiln
