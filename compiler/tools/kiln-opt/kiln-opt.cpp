//===- kiln-opt.cpp - MLIR opt driver with kiln's dialects and passes -----===//
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "compiler/InitAll.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  kiln::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kiln optimizer driver\n", registry));
}
