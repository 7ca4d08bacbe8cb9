//===- SlimmingUtils.h - what the slimming passes share --------------------===//
//
// Layer tags, the footprint numbers the passes report (parameters, KV bytes per token)
// and the module attribute `kiln.pass_effects`, a dictionary from a pass name to the
// "key=value,..." string of what it did, which the pipeline copies into the artifact's
// provenance. Lists inside a value are joined with '+' (the ',' separates keys).
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_SLIMMING_SLIMMINGUTILS_H
#define KILN_PASSES_SLIMMING_SLIMMINGUTILS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "dialects/kiln/IR/KilnAttrNames.h"

namespace kiln::slimming {

constexpr const char *kPassEffectsAttr = attr::kPassEffects;
constexpr const char *kLayerAttr = attr::kLayer;
constexpr const char *kMaxCtxAttr = attr::kMaxCtx;
constexpr const char *kContextLengthAttr = attr::kContextLength;
constexpr const char *kPrunedLayersAttr = attr::kPrunedLayers;

// Replaces the effects recorded for `pass`.
void recordPassEffects(mlir::ModuleOp module, llvm::StringRef pass, llvm::StringRef effects);
// The effects recorded for `pass`, or "".
std::string passEffects(mlir::ModuleOp module, llvm::StringRef pass);

// kiln.layer of an op, if tagged.
std::optional<int32_t> layerOf(mlir::Operation *op);
// Ops of @forward by decoder layer, in program order.
std::map<int32_t, std::vector<mlir::Operation *>> opsByLayer(mlir::func::FuncOp forward);

// Feature count (last dimension) of an activation.
int64_t features(mlir::Value v);
// Weight elements an op reads: in*out for linear/logits, the width for rms_norm, 0 else
// (the embedding table is never pruned, and its size is not in the op's types).
uint64_t parameterCount(mlir::Operation *op);
// fp32 K and V bytes one token adds to the KV cache of every attention op under `root`.
uint64_t kvBytesPerToken(mlir::Operation *root);
// cos + sin table bytes of every distinct (theta, rotary_dims) rope under `root`.
uint64_t ropeTableBytes(mlir::Operation *root, uint64_t positions);

// "1+3+5"
std::string joinList(const std::vector<int64_t> &values);

} // namespace kiln::slimming

#endif // KILN_PASSES_SLIMMING_SLIMMINGUTILS_H
