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

// The K-quants with an r16 form (q4_K_r16, q5_K_r16, q6_K_r16: rows of whole 256-element
// super-blocks, kiln/quant_packed.h).
bool kquantPackable(StorageFormat f) {
  return f == StorageFormat::q4_k || f == StorageFormat::q5_k || f == StorageFormat::q6_k;
}

struct AssignLayout : public impl::KilnAssignLayoutBase<AssignLayout> {
  using KilnAssignLayoutBase::KilnAssignLayoutBase;

  void runOnOperation() override {
    const std::optional<Layout> target = symbolizeLayout(layout);
    if (!target || target == Layout::block) {
      getOperation().emitError() << "kiln-assign-layout: unknown layout '" << layout
                                 << "' (expected r16, r32 or rows64)";
      return signalPassFailure();
    }
    if (rowAlign < 64 || rowAlign > 4096 || (rowAlign & (rowAlign - 1))) {
      getOperation().emitError() << "kiln-assign-layout: row-align " << uint64_t(rowAlign)
                                 << " is not a power of two in 64..4096";
      return signalPassFailure();
    }
    // Weights embed reads stay in ggml rows (a weight is stored once), but in r16, which
    // embed can read.
    llvm::StringSet<> embedded;
    getOperation().walk([&](EmbedOp e) { embedded.insert(e.getWeight()); });
    getOperation().walk([&](Operation *op) {
      if (!isa<LinearOp, LogitsOp, FusedLinearOp>(op))
        return;
      const WeightRead read = weightReadsOf(op).front();
      const StorageFormat fmt = StorageFormat(read.format);
      const StringRef weight = read.name;
      // q4_K, q5_K and q6_K rows of whole super-blocks take the r16 layout (the integer-dot
      // kernels), a tied table too: embed reads its rows from the groups (kiln_uk_embed), and
      // at 128k tokens the classifier is a quarter of a 1B model's bytes per token. An r32
      // target (HVX) gets r16 for them as well: it has no r32 K form, and its portable
      // integer r16 code runs 3.6x fewer packets than fp32 block rows (docs/perf.md, "HVX
      // K-quants in r16 groups"). q3_0 and other K-quant rows keep rows of whole blocks:
      // 64-byte rows would store a 64-wide q3_0 row (two 14-byte blocks) in 64 bytes, more
      // than q4_0_r16 takes, and a q6_K row of 2048 (1,680 bytes) in 1,728, more than the file.
      if (kquantPackable(fmt) && target != Layout::rows64 && read.rowLength > 0 &&
          read.rowLength % 256 == 0) {
        setLayout(op, Layout::r16);
        ++numPacked;
        return;
      }
      // A tied q4_0/q4_1/q8_0 table likewise: the classifier on the integer kernels.
      if (embedded.contains(weight) && target == Layout::r16 && packable(fmt)) {
        setLayout(op, Layout::r16);
        ++numPacked;
        return;
      }
      if (embedded.contains(weight)) {
        op->emitRemark() << "kiln-assign-layout: '" << weight
                         << "' is also read by embed, so it keeps the embedding's rows";
        return;
      }
      if (fmt == StorageFormat::q3_0 || fmt == StorageFormat::q4_k || fmt == StorageFormat::q5_k ||
          fmt == StorageFormat::q6_k) {
        setLayout(op, Layout::block);
        ++numBlock;
        return;
      }
      const bool pack = target != Layout::rows64 && packable(fmt);
      setLayout(op, pack ? *target : Layout::rows64);
      if (!pack)
        op->setAttr(attr::kRowAlign,
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), uint64_t(rowAlign)));
      ++(pack ? numPacked : numRows);
    });
  }
};

} // namespace
} // namespace kiln
