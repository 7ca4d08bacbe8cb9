//===- AssignUniformFormat.cpp - one storage format for every matrix ------===//
#include "passes/precision/Passes.h"

#include "dialects/kiln/IR/KilnOps.h"

#define DEBUG_TYPE "kiln-assign-uniform-format"

namespace kiln {
#define GEN_PASS_DEF_KILNASSIGNUNIFORMFORMAT
#include "passes/precision/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// Formats the code generators can store and compute with today.
bool isSupported(StorageFormat f) {
  return f == StorageFormat::f32 || f == StorageFormat::f16 || f == StorageFormat::q8_0 ||
         f == StorageFormat::q4_0 || f == StorageFormat::q4_1 || f == StorageFormat::q3_0 ||
         f == StorageFormat::q4_k || f == StorageFormat::q5_k || f == StorageFormat::q6_k;
}

struct AssignUniformFormat
    : public impl::KilnAssignUniformFormatBase<AssignUniformFormat> {
  using KilnAssignUniformFormatBase::KilnAssignUniformFormatBase;

  void runOnOperation() override {
    // ggml spells the K-quants q4_K..q6_K, the dialect q4_k..q6_k: either is taken
    std::optional<StorageFormat> target = symbolizeStorageFormat(StringRef(format).lower());
    if (!target || !isSupported(*target)) {
      getOperation().emitError() << "kiln-assign-uniform-format: unsupported format '"
                                 << format
                                 << "' (expected f32, f16, q8_0, q6_k, q5_k, q4_k, q4_0, q4_1 "
                                    "or q3_0)";
      return signalPassFailure();
    }
    auto attr = StorageFormatAttr::get(&getContext(), *target);
    getOperation().walk([&](Operation *op) {
      if (isa<EmbedOp, LinearOp, LogitsOp>(op))
        op->setAttr("format", attr);
    });
  }
};

} // namespace
} // namespace kiln
