//===- OnnxImport.h - ONNX file -> weight store + kiln IR -----------------===//
#ifndef KILN_FRONTENDS_ONNX_ONNXIMPORT_H
#define KILN_FRONTENDS_ONNX_ONNXIMPORT_H

#include <map>
#include <string>

#include "mlir/IR/MLIRContext.h"

#include "compiler/frontends/gguf/GgufImport.h"

namespace kiln::onnx {

// True for a file kiln reads as ONNX: a .onnx or .onnxtxt name, or ONNX text.
bool looksLikeOnnx(const std::string &path);

// Phase 1 (load, fold) and, when `raise`, phase 2 (raising patterns); `listing` receives
// the graph as `kiln import --emit=onnx|raised` prints it.
bool importOnnxStage(const std::string &path, bool raise, std::string &listing,
                     std::string &error);

// The whole import: load, fold, raise, check the result is a Llama decoder, and build
// kiln IR with models/llama from its hyper-parameters and weights.
bool importOnnx(const std::string &path, mlir::MLIRContext &ctx, gguf::ImportedModel &out,
                std::string &error);

} // namespace kiln::onnx

#endif // KILN_FRONTENDS_ONNX_ONNXIMPORT_H
