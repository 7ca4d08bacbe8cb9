//===- GgufImport.h - GGUF file -> weight store + kiln IR -----------------===//
#ifndef KILN_FRONTENDS_GGUF_GGUFIMPORT_H
#define KILN_FRONTENDS_GGUF_GGUFIMPORT_H

#include <memory>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "compiler/frontends/gguf/GgufFile.h"
#include "models/weights/WeightStore.h"
#include "models/llama/LlamaConfig.h"

namespace kiln::gguf {

// A model imported from any format (GGUF here, ONNX in compiler/frontends/onnx).
struct ImportedModel {
  std::unique_ptr<GgufFile> file; // GGUF only: owns the mapping that `weights` views
  std::shared_ptr<void> source;   // other formats: owns what `weights` views
  WeightStore weights;
  llama::LlamaConfig config;      // the source model's hyper-parameters
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

// Parses `path`, fills the weight store with views of every tensor and asks the model
// family named by general.architecture to build the IR. One-line error on failure.
bool importGguf(const std::string &path, mlir::MLIRContext &ctx, ImportedModel &out,
                std::string &error);

} // namespace kiln::gguf

#endif // KILN_FRONTENDS_GGUF_GGUFIMPORT_H
