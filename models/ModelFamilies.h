//===- ModelFamilies.h - the architectures kiln can build -----------------===//
//
// Frontends hand a parsed file to the family named by its architecture; each family
// turns hyper-parameters + named tensors into kiln IR. Adding a family means adding an
// entry here and a folder under models/ - frontends do not change.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_MODELFAMILIES_H
#define KILN_MODELS_MODELFAMILIES_H

#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "compiler/frontends/gguf/GgufFile.h"
#include "compiler/weights/WeightStore.h"

namespace kiln::models {

struct ModelFamily {
  const char *arch; // general.architecture value
  // Reads the family's GGUF keys, checks its tensors and builds the IR.
  mlir::OwningOpRef<mlir::ModuleOp> (*buildFromGguf)(const gguf::GgufFile &file,
                                                     const WeightStore &weights,
                                                     mlir::MLIRContext &ctx,
                                                     std::string &error);
};

// Null when no family handles `arch`.
const ModelFamily *findModelFamily(const std::string &arch);
// Comma-separated list of supported architectures, for error messages.
std::string supportedArchitectures();

} // namespace kiln::models

#endif // KILN_MODELS_MODELFAMILIES_H
