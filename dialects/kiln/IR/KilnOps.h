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

#define GET_ATTRDEF_CLASSES
#include "dialects/kiln/IR/KilnAttrs.h.inc"

namespace kiln {
// One weight an op reads (WeightReaderOpInterface).
struct WeightRead {
  llvm::StringRef name;
  uint32_t format = 0;    // storage format, ggml type id (kiln/quant.h)
  int64_t rows = 0;       // rows of rowLength elements; 0: not known from the op (an
  int64_t rowLength = 0;  // embedding table's vocabulary: the store's shape decides)
  bool matrix = false;    // a linear's matrix: kiln.layout and kiln.row_align apply
};

// The layout kiln-assign-layout gave op's weight rows (kiln.layout); none when it did not.
std::optional<Layout> layoutOf(mlir::Operation *op);
void setLayout(mlir::Operation *op, Layout layout);
// Whether op's weight rows are r16/r32 groups: the integer-dot kernels, which quantise the
// input into a workspace first.
inline bool readsRowGroups(mlir::Operation *op) {
  std::optional<Layout> l = layoutOf(op);
  return l == Layout::r16 || l == Layout::r32;
}
} // namespace kiln

#include "dialects/kiln/IR/KilnInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/kiln/IR/KilnOps.h.inc"

namespace kiln {
// The weights op reads (WeightReaderOpInterface), its own matrix first; none for an op that
// reads no weight.
llvm::SmallVector<WeightRead, 2> weightReadsOf(mlir::Operation *op);
} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_KILNOPS_H
