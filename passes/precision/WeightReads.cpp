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

uint32_t formatOf(Operation *op) {
  auto f = op->getAttrOfType<StorageFormatAttr>("format");
  return f ? uint32_t(f.getValue()) : 0u;
}

void setFormat(Operation *op, uint32_t format) {
  if (isa<RmsNormOp>(op) && format == 0u) {
    op->removeAttr("format");
    return;
  }
  op->setAttr("format", StorageFormatAttr::get(op->getContext(), StorageFormat(format)));
}

} // namespace kiln::precision
