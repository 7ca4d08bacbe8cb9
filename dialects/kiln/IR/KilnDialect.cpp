//===- KilnDialect.cpp - kiln dialect registration ------------------------===//
#include "dialects/kiln/IR/KilnDialect.h"
#include "dialects/kiln/IR/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "dialects/kiln/IR/KilnAttrNames.h"

using namespace kiln;

#include "dialects/kiln/IR/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
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
                      I64Array };

struct DeclaredAttr {
  const char *name;
  AttrKind kind;
};

constexpr DeclaredAttr kDeclared[] = {
    {attr::kArch, AttrKind::String},           {attr::kVocabSize, AttrKind::Positive},
    {attr::kNumLayers, AttrKind::Integer},     {attr::kContextLength, AttrKind::Positive},
    {attr::kMaxCtx, AttrKind::Positive},       {attr::kPrunedLayers, AttrKind::I32Array},
    {attr::kDerivedWeights, AttrKind::Dictionary}, {attr::kPassEffects, AttrKind::Dictionary},
    {attr::kLayer, AttrKind::Integer},         {attr::kLayout, AttrKind::Layout},
    {attr::kRowAlign, AttrKind::PowerOf2},     {attr::kTokenPanel, AttrKind::Positive},
    {attr::kShardGroups, AttrKind::Positive},  {attr::kMemoryPlan, AttrKind::Dictionary},
    {attr::kBuffers, AttrKind::I64Array},      {attr::kWorkspace, AttrKind::Integer},
    {attr::kKvSlots, AttrKind::I64Array},
};

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
  case AttrKind::Layout: {
    auto s = mlir::dyn_cast<mlir::StringAttr>(value);
    const bool known = s && (s.getValue() == "r16" || s.getValue() == "r32" ||
                             s.getValue() == "rows64" || s.getValue() == "block");
    return known ? mlir::success() : bad("one of \"r16\", \"r32\", \"rows64\", \"block\"");
  }
  case AttrKind::Dictionary:
    return mlir::isa<mlir::DictionaryAttr>(value) ? mlir::success() : bad("a dictionary");
  case AttrKind::I32Array:
    return mlir::isa<mlir::DenseI32ArrayAttr>(value) ? mlir::success() : bad("an i32 array");
  case AttrKind::I64Array:
    return mlir::isa<mlir::DenseI64ArrayAttr>(value) ? mlir::success() : bad("an i64 array");
  }
  return mlir::success();
}
