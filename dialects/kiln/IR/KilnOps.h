//===- KilnOps.h - kiln dialect operations --------------------------------===//
#ifndef KILN_DIALECTS_KILN_IR_KILNOPS_H
#define KILN_DIALECTS_KILN_IR_KILNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kiln/IR/KilnDialect.h"
#include "dialects/kiln/IR/KilnEnums.h.inc"

namespace kiln {
// One weight an op reads (WeightReaderOpInterface).
struct WeightRead {
  llvm::StringRef name;
  uint32_t format = 0;    // storage format, ggml type id (kiln/quant.h)
  int64_t rows = 0;       // rows of rowLength elements; 0: not known from the op (an
  int64_t rowLength = 0;  // embedding table's vocabulary: the store's shape decides)
  bool matrix = false;    // a linear's matrix: kiln.layout and kiln.row_align apply
};
} // namespace kiln

#include "dialects/kiln/IR/KilnInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/kiln/IR/KilnOps.h.inc"

#endif // KILN_DIALECTS_KILN_IR_KILNOPS_H
