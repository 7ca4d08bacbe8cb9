#include "passes/precision/WeightReads.h"

#include "dialects/kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln::precision {

std::vector<WeightRead> weightReads(ModuleOp module) {
  std::vector<WeightRead> reads;
  module.walk([&](Operation *op) {
    const char *kind = isa<EmbedOp>(op)     ? "embed"
                       : isa<LinearOp>(op)  ? "linear"
                       : isa<LogitsOp>(op)  ? "logits"
                       : isa<RmsNormOp>(op) ? "rms_norm"
                                            : nullptr;
    if (kind)
      reads.push_back({op, kind, op->getAttrOfType<StringAttr>("weight").str()});
  });
  return reads;
}

// The format of the op's own weight (WeightReaderOpInterface: an rms_norm without one
// reads f32), 0 for an op that reads none.
uint32_t formatOf(Operation *op) {
  SmallVector<::kiln::WeightRead, 2> reads = weightReadsOf(op);
  return reads.empty() ? 0u : reads.front().format;
}

void setFormat(Operation *op, uint32_t format) {
  if (isa<RmsNormOp>(op) && format == 0u) {
    op->removeAttr("format");
    return;
  }
  op->setAttr("format", StorageFormatAttr::get(op->getContext(), StorageFormat(format)));
}

} // namespace kiln::precision
