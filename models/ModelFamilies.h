//===- ModelFamilies.h - the architectures kiln can build -----------------===//
//
// Frontends hand a model source (ModelSource.h: metadata + named weights, whatever the
// file format) to the family named by its architecture; each family turns it into kiln
// IR. Adding a family means adding an entry here and a folder under models/ - frontends
// do not change.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_MODELFAMILIES_H
#define KILN_MODELS_MODELFAMILIES_H

#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "models/ModelSource.h"

namespace kiln::models {

struct ModelFamily {
  const char *arch; // general.architecture value
  // Reads the family's keys, checks its tensors and builds the IR.
  mlir::OwningOpRef<mlir::ModuleOp> (*build)(const ModelSource &source,
                                             mlir::MLIRContext &ctx, std::string &error);
};

// Null when no family handles `arch`.
const ModelFamily *findModelFamily(const std::string &arch);
// Comma-separated list of supported architectures, for error messages.
std::string supportedArchitectures();

} // namespace kiln::models

#endif // KILN_MODELS_MODELFAMILIES_H
