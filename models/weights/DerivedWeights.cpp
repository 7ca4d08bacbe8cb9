#include "models/weights/DerivedWeights.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstring>
#include <set>

#include "dialects/kiln/IR/KilnOps.h"
#include "kiln/quant.h"
#include "models/weights/HadamardRotation.h"

using namespace mlir;

namespace kiln {

DictionaryAttr derivedRecipe(MLIRContext *ctx, DeriveOp op, ArrayRef<NamedAttribute> fields) {
  Builder b(ctx);
  NamedAttrList all(fields);
  all.set("op", b.getStringAttr(stringifyDeriveOp(op)));
  return all.getDictionary(ctx);
}

void addDerivedWeight(ModuleOp module, const std::string &name, DictionaryAttr recipe) {
  Builder b(module.getContext());
  NamedAttrList entries;
  if (auto old = module->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr))
    entries.append(old.getValue());
  entries.set(b.getStringAttr(name), recipe);
  module->setAttr(kDerivedWeightsAttr, entries.getDictionary(module.getContext()));
}

namespace {

std::optional<DeriveOp> deriveOpOf(DictionaryAttr recipe) {
  auto op = recipe.getAs<StringAttr>("op");
  return op ? symbolizeDeriveOp(op.getValue()) : std::nullopt;
}

bool materializeOne(const std::string &name, DictionaryAttr recipe, DictionaryAttr all,
                    WeightStore &store, int depth, std::string &error);

// Weight `source` in the store, materialised first when it is itself derived.
const WeightView *findSource(const std::string &name, const std::string &source,
                             DictionaryAttr all, WeightStore &store, int depth,
                             std::string &error) {
  if (auto inner = all.getAs<DictionaryAttr>(source)) {
    if (depth > 16) {
      error = "derived weight '" + name + "' has a recipe cycle";
      return nullptr;
    }
    if (!materializeOne(source, inner, all, store, depth + 1, error))
      return nullptr;
  }
  const WeightView *v = store.find(source);
  if (!v)
    error = "derived weight '" + name + "': source '" + source + "' does not exist";
  return v;
}

// fp32 data of weight `source` (materialised first when it is itself derived).
bool loadSource(const std::string &name, const std::string &source, DictionaryAttr all,
                WeightStore &store, int depth, std::vector<float> &data, std::string &error) {
  return findSource(name, source, all, store, depth, error) &&
         store.dequantize(source, data, error);
}

// Bytes of one row of `v` in its stored format; 0 when the tensor is not whole rows of a
// format the runtime knows (a 1-D tensor included).
uint64_t rowBytesOf(const WeightView &v) {
  uint64_t bytes = 0;
  if (v.dims.size() != 2 ||
      kiln_ggml_row_bytes(v.format, v.rowLength(), &bytes) != KILN_STATUS_OK ||
      bytes * v.numRows() != v.nbytes)
    return 0;
  return bytes;
}

// Row-wise recipes over sources of one stored format copy whole rows, which hold whole
// blocks: a fused or pruned projection of a Q4_0 file keeps those q4_0 blocks and is
// repacked losslessly, where its fp32 values requantised would get other scales. `rows`
// lists (source, row) in output order. False, with nothing added, when the sources'
// formats or row sizes differ.
bool copyRows(const std::string &name, const std::vector<const WeightView *> &sources,
              const std::vector<std::pair<size_t, uint64_t>> &rows, WeightStore &store) {
  const uint64_t rowBytes = rowBytesOf(*sources[0]);
  for (const WeightView *v : sources)
    if (rowBytes == 0 || v->format != sources[0]->format || rowBytesOf(*v) != rowBytes)
      return false;
  std::vector<uint8_t> bytes(rows.size() * rowBytes);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(bytes.data() + i * rowBytes,
                sources[rows[i].first]->data + rows[i].second * rowBytes, rowBytes);
  store.addOwned(name, sources[0]->format, {sources[0]->rowLength(), uint64_t(rows.size())},
                 std::move(bytes));
  return true;
}

// The stacked weight keeps the sources' calibrated encodings (WeightStore.h) in every
// format all of them have one in: rows are independent, so stacking the encoded rows is
// the encoding of the stack.
void copyEncodings(const std::string &name, const std::vector<std::string> &sources,
                   const std::vector<std::pair<size_t, uint64_t>> &rows, WeightStore &store) {
  for (uint32_t format : store.encodedFormats(sources[0])) {
    const WeightEncoding *first = store.encoding(sources[0], format);
    std::vector<const WeightEncoding *> enc;
    for (const std::string &s : sources)
      if (const WeightEncoding *e = store.encoding(s, format);
          e && e->paddedRowLength == first->paddedRowLength)
        enc.push_back(e);
    if (enc.size() != sources.size())
      continue;
    uint64_t rowBytes = 0;
    kiln_ggml_row_bytes(format, enc[0]->paddedRowLength, &rowBytes);
    WeightEncoding out{format, enc[0]->paddedRowLength, enc[0]->method, {}};
    out.bytes.resize(rows.size() * rowBytes);
    for (size_t i = 0; i < rows.size(); ++i)
      std::memcpy(out.bytes.data() + i * rowBytes,
                  enc[rows[i].first]->bytes.data() + rows[i].second * rowBytes, rowBytes);
    store.setEncoding(name, std::move(out));
  }
}

// concat_rows: the sources' rows one after another (all of one row length).
// interleave_rows: two sources of one shape, row 2j from the first, 2j+1 from the second.
// In the sources' format when they share one (copyRows), else fp32.
bool materializeMulti(const std::string &name, DictionaryAttr recipe, DictionaryAttr all,
                      WeightStore &store, int depth, std::string &error) {
  const bool interleave = deriveOpOf(recipe) == DeriveOp::interleave_rows;
  auto sources = recipe.getAs<ArrayAttr>("sources");
  if (!sources || sources.empty() || (interleave && sources.size() != 2)) {
    error = "derived weight '" + name + "' needs " +
            (interleave ? "two 'sources'" : "a non-empty array of 'sources'");
    return false;
  }
  std::vector<std::string> names;
  std::vector<const WeightView *> views;
  for (Attribute a : sources) {
    auto s = dyn_cast<StringAttr>(a);
    if (!s) {
      error = "derived weight '" + name + "': 'sources' must be strings";
      return false;
    }
    const WeightView *v = findSource(name, s.str(), all, store, depth, error);
    if (!v)
      return false;
    if (!views.empty() && (v->rowLength() != views[0]->rowLength() ||
                           (interleave && v->numRows() != views[0]->numRows()))) {
      error = "derived weight '" + name + "': source '" + s.str() + "' does not match the "
              "shape of the first source";
      return false;
    }
    names.push_back(s.str());
    views.push_back(v);
  }
  std::vector<std::pair<size_t, uint64_t>> rows;
  if (interleave)
    for (uint64_t r = 0; r < views[0]->numRows(); ++r)
      rows.insert(rows.end(), {{0, r}, {1, r}});
  else
    for (size_t i = 0; i < views.size(); ++i)
      for (uint64_t r = 0; r < views[i]->numRows(); ++r)
        rows.push_back({i, r});
  if (copyRows(name, views, rows, store)) {
    copyEncodings(name, names, rows, store);
    return true;
  }
  const uint64_t cols = views[0]->rowLength();
  std::vector<std::vector<float>> parts(names.size());
  for (size_t i = 0; i < names.size(); ++i)
    if (!store.dequantize(names[i], parts[i], error))
      return false;
  std::vector<float> out;
  out.reserve(rows.size() * cols);
  for (const auto &[i, r] : rows)
    out.insert(out.end(), parts[i].begin() + r * cols, parts[i].begin() + (r + 1) * cols);
  store.addOwnedF32(name, {cols, uint64_t(rows.size())}, std::move(out));
  copyEncodings(name, names, rows, store);
  return true;
}

// What a derived weight is built from: its recipe and, in turn, its derived sources'
// recipes, as text. The same text builds the same values.
std::string recipeChainOf(DictionaryAttr recipe, DictionaryAttr all, int depth) {
  std::string text;
  llvm::raw_string_ostream os(text);
  recipe.print(os);
  auto source = [&](Attribute a) {
    auto n = dyn_cast_or_null<StringAttr>(a);
    auto inner = n ? all.getAs<DictionaryAttr>(n) : DictionaryAttr();
    if (inner && depth < 16)
      text += "<" + recipeChainOf(inner, all, depth + 1) + ">";
  };
  source(recipe.get("source"));
  source(recipe.get("by"));
  if (auto sources = recipe.getAs<ArrayAttr>("sources"))
    for (Attribute a : sources)
      source(a);
  return text;
}

bool buildOne(const std::string &name, DictionaryAttr recipe, DictionaryAttr all,
              WeightStore &store, int depth, std::string &error);

// A derived weight already built from the same recipe chain is kept as it is, with any
// encoding calibrated rounding gave it (building it again would drop that).
bool materializeOne(const std::string &name, DictionaryAttr recipe, DictionaryAttr all,
                    WeightStore &store, int depth, std::string &error) {
  if (store.find(name) && !all.get(name))
    return true;
  std::string chain = recipeChainOf(recipe, all, 0);
  const std::string *built = store.builtFrom(name);
  if (store.find(name) && built && *built == chain)
    return true;
  if (!buildOne(name, recipe, all, store, depth, error))
    return false;
  store.setBuiltFrom(name, std::move(chain));
  return true;
}

bool buildOne(const std::string &name, DictionaryAttr recipe, DictionaryAttr all,
              WeightStore &store, int depth, std::string &error) {
  const std::optional<DeriveOp> op = deriveOpOf(recipe);
  if (!op) {
    auto given = recipe.getAs<StringAttr>("op");
    error = "derived weight '" + name + "': unknown op '" + (given ? given.str() : "") + "'";
    return false;
  }
  // Inline data (small vectors such as compensation biases): no source.
  if (op == DeriveOp::values) {
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
  // Recipes over several sources (fusion: stacked projections).
  if (op == DeriveOp::concat_rows || op == DeriveOp::interleave_rows)
    return materializeMulti(name, recipe, all, store, depth, error);
  auto source = recipe.getAs<StringAttr>("source");
  if (!source) {
    error = "derived weight '" + name + "' needs a source";
    return false;
  }
  // A source that is itself derived is materialised first (recipes chain).
  const WeightView *src = findSource(name, source.str(), all, store, depth, error);
  if (!src)
    return false;
  const uint64_t cols = src->rowLength(), rows = src->numRows();
  std::vector<int64_t> idx;
  if (auto indices = recipe.getAs<DenseI64ArrayAttr>("indices"))
    idx.assign(indices.asArrayRef().begin(), indices.asArrayRef().end());
  if (op == DeriveOp::select_rows && src->dims.size() == 2) { // whole rows: as stored
    std::vector<std::pair<size_t, uint64_t>> picked;
    for (int64_t r : idx)
      if (r >= 0 && uint64_t(r) < rows)
        picked.push_back({0, uint64_t(r)});
    if (picked.size() == idx.size() && copyRows(name, {src}, picked, store))
      return true;
  }
  std::vector<float> data;
  if (!store.dequantize(source.str(), data, error))
    return false;
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
  if (op == DeriveOp::select_rows) {
    if (outOfRange(rows))
      return false;
    for (int64_t r : idx)
      out.insert(out.end(), data.begin() + r * cols, data.begin() + (r + 1) * cols);
    dims = {cols, uint64_t(idx.size())};
  } else if (op == DeriveOp::select_cols) {
    if (outOfRange(cols))
      return false;
    for (uint64_t r = 0; r < rows; ++r)
      for (int64_t c : idx)
        out.push_back(data[r * cols + c]);
    dims = {uint64_t(idx.size()), rows};
  } else if (op == DeriveOp::scale) {
    auto factor = recipe.getAs<FloatAttr>("factor");
    if (!factor) {
      error = "derived weight '" + name + "': scale needs a factor";
      return false;
    }
    out = data;
    for (float &x : out)
      x *= float(factor.getValueAsDouble());
    dims = src->dims;
  } else if (op == DeriveOp::rotate_rows || op == DeriveOp::rotate_cols) {
    auto seed = recipe.getAs<IntegerAttr>("seed");
    const uint64_t n = op == DeriveOp::rotate_rows ? cols : rows;
    if (!seed || !rotation::isSupported(n) || src->dims.size() > 2) {
      error = "derived weight '" + name + "': " + stringifyDeriveOp(*op).str() +
              " needs a seed and a source whose rotated side has a Hadamard matrix (it is " +
              std::to_string(n) + ")";
      return false;
    }
    out = data;
    if (op == DeriveOp::rotate_rows)
      rotation::rotateRowsOf(out.data(), rows, cols, uint64_t(seed.getInt()));
    else
      rotation::rotateColumnsOf(out.data(), rows, cols, uint64_t(seed.getInt()));
    dims = src->dims;
  } else { // scale_cols
    // W diag(g): column c times g[c] (an rms_norm weight folded into a linear).
    auto by = recipe.getAs<StringAttr>("by");
    std::vector<float> g;
    if (!by) {
      error = "derived weight '" + name + "': scale_cols needs 'by' (a 1-D weight)";
      return false;
    }
    if (!loadSource(name, by.str(), all, store, depth, g, error))
      return false;
    if (g.size() != cols) {
      error = "derived weight '" + name + "': '" + by.str() + "' has " +
              std::to_string(g.size()) + " values for " + std::to_string(cols) + " columns";
      return false;
    }
    out = data;
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t c = 0; c < cols; ++c)
        out[r * cols + c] *= g[c];
    dims = src->dims;
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
  // A fusion recipe's result that no op reads (a folded q consumed by the fused qkv) is
  // only an intermediate: built when a reader needs it, then freed, which keeps a
  // TinyLlama-size compile from holding every fp32 intermediate at once.
  std::set<std::string> read;
  module.walk([&](Operation *op) {
    for (const WeightRead &w : weightReadsOf(op))
      read.insert(w.name.str());
  });
  auto intermediate = [&](NamedAttribute entry) {
    auto recipe = dyn_cast<DictionaryAttr>(entry.getValue());
    const std::optional<DeriveOp> op = recipe ? deriveOpOf(recipe) : std::nullopt;
    return op && !read.count(entry.getName().str()) &&
           (op == DeriveOp::scale_cols || op == DeriveOp::concat_rows ||
            op == DeriveOp::interleave_rows);
  };
  for (NamedAttribute entry : all) {
    auto recipe = dyn_cast<DictionaryAttr>(entry.getValue());
    if (!recipe) {
      error = "derived weight '" + entry.getName().str() + "' has no recipe dictionary";
      return false;
    }
    if (intermediate(entry))
      continue;
    if (!materializeOne(entry.getName().str(), recipe, all, store, 0, error))
      return false;
    for (NamedAttribute other : all)
      if (intermediate(other))
        store.remove(other.getName().str());
  }
  return true;
}

bool materializeDerivedWeight(ModuleOp module, const std::string &name, WeightStore &store,
                              std::string &error) {
  auto all = module->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr);
  auto recipe = all ? all.getAs<DictionaryAttr>(name) : DictionaryAttr();
  if (!recipe) {
    error = "weight '" + name + "' is not in the weight store and has no recipe";
    return false;
  }
  std::vector<std::string> absent;
  for (NamedAttribute entry : all)
    if (entry.getName().str() != name && !store.find(entry.getName().str()))
      absent.push_back(entry.getName().str());
  const bool ok = materializeOne(name, recipe, all, store, 0, error);
  for (const std::string &other : absent) // intermediates this call built
    store.remove(other);
  return ok;
}

} // namespace kiln
