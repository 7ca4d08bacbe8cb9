//===- InitAll.h - explicit registration of kiln's dialects and passes ----===//
//
// No static initialisers: every tool calls these once at start-up.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_INITALL_H
#define KILN_COMPILER_INITALL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "codegen/cpu/LowerToUkernels.h"
#if KILN_HAVE_VULKAN
#include "codegen/vulkan/LowerToDispatches.h"
#endif
#include "dialects/kiln/IR/KilnDialect.h"
#include "passes/Passes.h"

namespace kiln {

inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<KilnDialect, mlir::func::FuncDialect, mlir::LLVM::LLVMDialect>();
}

// kiln's own passes (the back ends' lowering passes included) plus the generic MLIR transforms useful on kiln IR.
inline void registerAllPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  registerKilnPasses();
  codegen::registerKilnCpuCodegenPasses();
#if KILN_HAVE_VULKAN
  codegen::vulkan::registerKilnVulkanCodegenPasses();
#endif
}

} // namespace kiln

#endif // KILN_COMPILER_INITALL_H
