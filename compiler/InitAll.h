//===- InitAll.h - explicit registration of kiln's dialects and passes ----===//
//
// No static initialisers: every tool calls these once at start-up.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_INITALL_H
#define KILN_COMPILER_INITALL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "dialects/kiln/IR/KilnDialect.h"
#include "passes/Passes.h"

namespace kiln {

inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<KilnDialect, mlir::func::FuncDialect>();
}

// kiln's own passes plus the generic MLIR transforms useful on kiln IR.
inline void registerAllPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  registerKilnPasses();
}

} // namespace kiln

#endif // KILN_COMPILER_INITALL_H
