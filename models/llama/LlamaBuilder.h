//===- LlamaBuilder.h - Llama hyper-parameters + weights -> kiln IR -------===//
#ifndef KILN_MODELS_LLAMA_LLAMABUILDER_H
#define KILN_MODELS_LLAMA_LLAMABUILDER_H

#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "models/weights/WeightStore.h"
#include "models/llama/LlamaConfig.h"

namespace kiln::llama {

// Builds `func.func @forward(%tokens: tensor<?xi32>, %positions: tensor<?xi32>) ->
// tensor<?xVxf32>`: one function for prefill (many tokens) and decode (one token) over
// the KV cache the attention ops own. Weight formats are taken from `weights`; the
// config is recorded as module attributes (kiln.*). Returns null with `error` set when
// a weight the architecture needs is missing.
mlir::OwningOpRef<mlir::ModuleOp> buildLlama(mlir::MLIRContext &ctx, const LlamaConfig &config,
                                             const WeightStore &weights, std::string &error);

} // namespace kiln::llama

#endif // KILN_MODELS_LLAMA_LLAMABUILDER_H
