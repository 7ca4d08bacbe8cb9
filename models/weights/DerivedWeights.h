//===- DerivedWeights.h - weights that passes derive from stored ones -----===//
//
// A pass that needs a new weight (the rows of wq for the heads it keeps, a scaled
// matrix, ...) never touches bytes: it records the recipe in the module attribute
// `kiln.derived_weights`, a dictionary from the new name to a recipe dictionary:
//   {source = "blk.0.attn_q.weight", op = "select_rows", indices = array<i64: 0, 1, 3>}
//   {source = "blk.0.attn_output.weight", op = "select_cols", indices = array<i64: ...>}
//   {source = "blk.0.attn_output.weight", op = "scale", factor = 0.5 : f32}
//   {source = "blk.0.attn_q.weight", op = "scale_cols", by = "blk.0.attn_norm.weight"}
//                                                     (W diag(g): norm folding)
//   {op = "concat_rows", sources = ["q", "k", "v"]}   (rows of each in turn: fused QKV)
//   {op = "interleave_rows", sources = ["gate", "up"]} (gate row j, up row j, ...: SwiGLU)
//   {op = "values", values = array<f32: 0.1, -0.2>}   (inline 1-D [n] data, no source:
//                                                      compensation biases)
//   {source = "blk.0.attn_q.weight", op = "rotate_rows", seed = 1 : i64}
//                            (W Q^T, every row rotated: it reads a rotated residual stream;
//                             Q of models/weights/HadamardRotation.h)
//   {source = "blk.0.attn_output.weight", op = "rotate_cols", seed = 1 : i64}
//                            (Q W, every column rotated: it writes one)
// Recipes may name other derived weights as their source. materializeDerivedWeights turns
// the recipes into tensors owned by the store, so the executor and the code generator see
// derived weights exactly like stored ones, and the IR stays the single record of what was
// done. Row-wise recipes (select_rows, concat_rows, interleave_rows) over sources of one
// format keep that format, rows copied as stored (a Q4_0 file's blocks stay its blocks);
// the others give fp32.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_WEIGHTS_DERIVEDWEIGHTS_H
#define KILN_MODELS_WEIGHTS_DERIVEDWEIGHTS_H

#include <string>

#include "mlir/IR/BuiltinOps.h"

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "models/weights/WeightStore.h"

namespace kiln {

constexpr const char *kDerivedWeightsAttr = attr::kDerivedWeights;

// The recipe {op = <op>, fields...} (the fields KilnDialect checks for each DeriveOp).
mlir::DictionaryAttr derivedRecipe(mlir::MLIRContext *ctx, DeriveOp op,
                                   llvm::ArrayRef<mlir::NamedAttribute> fields);

// Adds (or replaces) one recipe on the module.
void addDerivedWeight(mlir::ModuleOp module, const std::string &name,
                      mlir::DictionaryAttr recipe);

// Materialises every recipe of the module into `store` (owned). One-line error
// naming the weight on failure (unknown source or op, index out of range).
bool materializeDerivedWeights(mlir::ModuleOp module, WeightStore &store, std::string &error);

// Materialises the one derived weight `name` into `store`, for a consumer that packs
// weights one at a time and removes each when done (kiln compile). The derived weights it
// is built from are removed again unless the store already held them. One-line error
// when `name` has no recipe or its recipe fails.
bool materializeDerivedWeight(mlir::ModuleOp module, const std::string &name,
                              WeightStore &store, std::string &error);

} // namespace kiln

#endif // KILN_MODELS_WEIGHTS_DERIVEDWEIGHTS_H
