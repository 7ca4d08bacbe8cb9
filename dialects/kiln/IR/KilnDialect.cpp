//===- KilnDialect.cpp - kiln dialect registration ------------------------===//
#include "dialects/kiln/IR/KilnDialect.h"
#include "dialects/kiln/IR/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "dialects/kiln/IR/KilnAttrNames.h"

using namespace kiln;

#include "dialects/kiln/IR/KilnDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/kiln/IR/KilnAttrs.cpp.inc"

std::optional<Layout> kiln::layoutOf(mlir::Operation *op) {
  if (auto l = op->getAttrOfType<LayoutAttr>(attr::kLayout))
    return l.getValue();
  return std::nullopt;
}

void kiln::setLayout(mlir::Operation *op, Layout layout) {
  op->setAttr(attr::kLayout, LayoutAttr::get(op->getContext(), layout));
}

void KilnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/kiln/IR/KilnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/kiln/IR/KilnOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// The discardable attributes (KilnAttrNames.h)
//===----------------------------------------------------------------------===//

namespace {

enum class AttrKind { Integer, Positive, PowerOf2, String, Layout, Dictionary, I32Array,
                      I64Array, Recipes, Effects };

struct DeclaredAttr {
  const char *name;
  AttrKind kind;
};

constexpr DeclaredAttr kDeclared[] = {
    {attr::kArch, AttrKind::String},           {attr::kVocabSize, AttrKind::Positive},
    {attr::kNumLayers, AttrKind::Integer},     {attr::kContextLength, AttrKind::Positive},
    {attr::kMaxCtx, AttrKind::Positive},       {attr::kPrunedLayers, AttrKind::I32Array},
    {attr::kDerivedWeights, AttrKind::Recipes}, {attr::kPassEffects, AttrKind::Effects},
    {attr::kLayer, AttrKind::Integer},         {attr::kLayout, AttrKind::Layout},
    {attr::kRowAlign, AttrKind::PowerOf2},     {attr::kTokenPanel, AttrKind::Positive},
    {attr::kShardGroups, AttrKind::Positive},  {attr::kMemoryPlan, AttrKind::Dictionary},
    {attr::kBuffers, AttrKind::I64Array},      {attr::kWorkspace, AttrKind::Integer},
    {attr::kKvSlots, AttrKind::I64Array},
};

// The fields a recipe of each DeriveOp has besides `op` (models/weights/DerivedWeights.h).
// A recipe field: its name, what it must hold, and the check.
struct Field {
  const char *name, *what;
  bool (*holds)(mlir::Attribute);
};

bool weightNames(mlir::Attribute v, size_t count) {
  auto names = mlir::dyn_cast_or_null<mlir::ArrayAttr>(v);
  return names && !names.empty() && (!count || names.size() == count) &&
         llvm::all_of(names, [](mlir::Attribute n) { return mlir::isa<mlir::StringAttr>(n); });
}

constexpr Field kSource{"source", "a weight name", [](mlir::Attribute v) {
                          return mlir::isa_and_nonnull<mlir::StringAttr>(v);
                        }};
constexpr Field kBy{"by", "a weight name", kSource.holds};
constexpr Field kIndices{"indices", "array<i64>", [](mlir::Attribute v) {
                           return mlir::isa_and_nonnull<mlir::DenseI64ArrayAttr>(v);
                         }};
constexpr Field kFactor{"factor", "a float", [](mlir::Attribute v) {
                          return mlir::isa_and_nonnull<mlir::FloatAttr>(v);
                        }};
constexpr Field kSeed{"seed", "an integer", [](mlir::Attribute v) {
                        return mlir::isa_and_nonnull<mlir::IntegerAttr>(v);
                      }};
constexpr Field kSources{"sources", "a non-empty list of weight names",
                         [](mlir::Attribute v) { return weightNames(v, 0); }};
constexpr Field kPair{"sources", "two weight names",
                      [](mlir::Attribute v) { return weightNames(v, 2); }};
constexpr Field kValues{"values", "a non-empty array<f32>", [](mlir::Attribute v) {
                          auto f = mlir::dyn_cast_or_null<mlir::DenseF32ArrayAttr>(v);
                          return f && !f.empty();
                        }};

// The fields a recipe of each DeriveOp has besides `op` (models/weights/DerivedWeights.h).
llvm::SmallVector<Field, 2> fieldsOf(DeriveOp op) {
  switch (op) {
  case DeriveOp::select_rows:
  case DeriveOp::select_cols: return {kSource, kIndices};
  case DeriveOp::scale: return {kSource, kFactor};
  case DeriveOp::scale_cols: return {kSource, kBy};
  case DeriveOp::concat_rows: return {kSources};
  case DeriveOp::interleave_rows: return {kPair};
  case DeriveOp::values: return {kValues};
  case DeriveOp::rotate_rows:
  case DeriveOp::rotate_cols: return {kSource, kSeed};
  }
  return {};
}

// Why `recipe` is not a well-formed recipe of its op, empty when it is.
std::string recipeProblem(mlir::Attribute value) {
  auto recipe = mlir::dyn_cast<mlir::DictionaryAttr>(value);
  if (!recipe)
    return "is not a dictionary";
  auto opName = recipe.getAs<mlir::StringAttr>("op");
  std::optional<DeriveOp> op = opName ? symbolizeDeriveOp(opName.getValue()) : std::nullopt;
  if (!op)
    return "has no known 'op' (select_rows, select_cols, scale, scale_cols, concat_rows, "
           "interleave_rows, values, rotate_rows, rotate_cols)";
  const llvm::SmallVector<Field, 2> fields = fieldsOf(*op);
  for (mlir::NamedAttribute f : recipe)
    if (f.getName() != "op" &&
        llvm::none_of(fields, [&](const Field &k) { return f.getName() == k.name; }))
      return ("has a field '" + f.getName().getValue() + "' that " + opName.getValue() +
              " does not take").str();
  for (const Field &k : fields)
    if (!k.holds(recipe.get(k.name)))
      return (opName.getValue() + " needs '" + k.name + "' (" + k.what + ")").str();
  return "";
}

} // namespace

mlir::LogicalResult KilnDialect::verifyOperationAttribute(mlir::Operation *op,
                                                          mlir::NamedAttribute named) {
  const mlir::StringRef name = named.getName().getValue();
  const mlir::Attribute value = named.getValue();
  const DeclaredAttr *decl = nullptr;
  for (const DeclaredAttr &d : kDeclared)
    if (name == d.name)
      decl = &d;
  if (!decl)
    return op->emitOpError() << "carries unknown attribute '" << name
                             << "' (kiln attributes are declared in KilnAttrNames.h)";
  auto integer = mlir::dyn_cast<mlir::IntegerAttr>(value);
  auto bad = [&](const char *expected) {
    return op->emitOpError() << "attribute '" << name << "' must be " << expected << ", got "
                             << value;
  };
  switch (decl->kind) {
  case AttrKind::Integer:
    return integer ? mlir::success() : bad("an integer");
  case AttrKind::Positive:
    return integer && integer.getInt() > 0 ? mlir::success() : bad("a positive integer");
  case AttrKind::PowerOf2:
    return integer && integer.getInt() >= 64 && !(integer.getInt() & (integer.getInt() - 1))
               ? mlir::success()
               : bad("a power of two >= 64");
  case AttrKind::String:
    return mlir::isa<mlir::StringAttr>(value) ? mlir::success() : bad("a string");
  case AttrKind::Layout:
    return mlir::isa<LayoutAttr>(value) ? mlir::success() : bad("a #kiln.layout");
  case AttrKind::Dictionary:
    return mlir::isa<mlir::DictionaryAttr>(value) ? mlir::success() : bad("a dictionary");
  case AttrKind::Recipes: {
    auto all = mlir::dyn_cast<mlir::DictionaryAttr>(value);
    if (!all)
      return bad("a dictionary of recipes");
    for (mlir::NamedAttribute entry : all)
      if (std::string problem = recipeProblem(entry.getValue()); !problem.empty())
        return op->emitOpError() << "derived weight '" << entry.getName().getValue()
                                 << "': the recipe " << problem;
    return mlir::success();
  }
  case AttrKind::Effects: {
    // pass name -> "key=value,..." (the provenance's effects text, in the pass's order)
    auto all = mlir::dyn_cast<mlir::DictionaryAttr>(value);
    auto wellFormed = [](mlir::Attribute a) {
      auto s = mlir::dyn_cast<mlir::StringAttr>(a);
      if (!s)
        return false;
      llvm::SmallVector<llvm::StringRef, 8> items;
      s.getValue().split(items, ',');
      return s.getValue().empty() || llvm::all_of(items, [](llvm::StringRef i) {
               return i.contains('=') && !i.starts_with("=");
             });
    };
    return all && llvm::all_of(all, [&](mlir::NamedAttribute e) {
             return wellFormed(e.getValue());
           })
               ? mlir::success()
               : bad("a dictionary from pass names to \"key=value,...\" strings");
  }
  case AttrKind::I32Array:
    return mlir::isa<mlir::DenseI32ArrayAttr>(value) ? mlir::success() : bad("an i32 array");
  case AttrKind::I64Array:
    return mlir::isa<mlir::DenseI64ArrayAttr>(value) ? mlir::success() : bad("an i64 array");
  }
  return mlir::success();
}
