//===- AssignLayout.cpp - per-linear weight layout (r16/r32 repack, rows) ---===//
#include "passes/layout/Passes.h"

#include "llvm/ADT/StringSet.h"

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"

#define DEBUG_TYPE "kiln-assign-layout"

namespace kiln {
#define GEN_PASS_DEF_KILNASSIGNLAYOUT
#include "passes/layout/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// Block formats the packed kernels (kiln_uk_linear_packed) compute with.
bool packable(StorageFormat f) {
  return f == StorageFormat::q4_0 || f == StorageFormat::q4_1 || f == StorageFormat::q8_0;
}

struct AssignLayout : public impl::KilnAssignLayoutBase<AssignLayout> {
  using KilnAssignLayoutBase::KilnAssignLayoutBase;

  void runOnOperation() override {
    if (layout != "r16" && layout != "r32" && layout != "rows64") {
      getOperation().emitError() << "kiln-assign-layout: unknown layout '" << layout
                                 << "' (expected r16, r32 or rows64)";
      return signalPassFailure();
    }
    if (rowAlign < 64 || rowAlign > 4096 || (rowAlign & (rowAlign - 1))) {
      getOperation().emitError() << "kiln-assign-layout: row-align " << uint64_t(rowAlign)
                                 << " is not a power of two in 64..4096";
      return signalPassFailure();
    }
    // Weights embed reads stay in ggml rows (a weight is stored once).
    llvm::StringSet<> embedded;
    getOperation().walk([&](EmbedOp e) { embedded.insert(e.getWeight()); });
    getOperation().walk([&](Operation *op) {
      if (!isa<LinearOp, LogitsOp, FusedLinearOp>(op))
        return;
      auto fmt = op->getAttrOfType<StorageFormatAttr>("format");
      StringRef weight = op->getAttrOfType<StringAttr>("weight").getValue();
      if (embedded.contains(weight)) {
        op->emitRemark() << "kiln-assign-layout: '" << weight
                         << "' is also read by embed, so it keeps the embedding's rows";
        return;
      }
      // q3_0 and the K-quants have no packed form. 64-byte rows would store a 64-wide q3_0
      // row (two 14-byte blocks) in 64 bytes, more than q4_0_r16 takes, and a q6_K row of
      // 2048 (1,680 bytes) in 1,728, more than the file: they keep rows of whole blocks.
      if (fmt && (fmt.getValue() == StorageFormat::q3_0 || fmt.getValue() == StorageFormat::q4_k ||
                  fmt.getValue() == StorageFormat::q5_k || fmt.getValue() == StorageFormat::q6_k)) {
        op->setAttr(attr::kLayout, StringAttr::get(&getContext(), "block"));
        ++numBlock;
        return;
      }
      const bool pack = layout != "rows64" && fmt && packable(fmt.getValue());
      op->setAttr(attr::kLayout,
                  StringAttr::get(&getContext(), pack ? StringRef(layout) : "rows64"));
      if (!pack)
        op->setAttr(attr::kRowAlign,
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), uint64_t(rowAlign)));
      ++(pack ? numPacked : numRows);
    });
  }
};

} // namespace
} // namespace kiln
