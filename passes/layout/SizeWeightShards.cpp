//===- SizeWeightShards.cpp - decode weight shards sized to the DSP's L2 --===//
//
// A core whose hardware does not prefetch a long stream on its own (Hexagon: the HVX
// kernels bring weights into L2 with l2fetch) reads a matrix in shards: while it computes
// one, the next is on its way. Two shards in flight must leave the cache room for the
// activations, the outputs and the rest of the step, so a shard is a quarter of the cache,
// in whole row groups (a group is the packed kernels' unit of work and is contiguous). The
// lowering passes the count to the kernel, which issues one prefetch per shard boundary.
// A model whose packed weights fit in half the cache stays there from one token to the
// next, so it gets no shards (each costs packets and would fetch what is already there).
// Results do not depend on it: a prefetch only moves data closer.
//===----------------------------------------------------------------------===//
#include "passes/layout/Passes.h"

#include <algorithm>

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "llvm/ADT/SmallVector.h"
#include "kiln/quant.h"
#include "kiln/quant_packed.h"

#define DEBUG_TYPE "kiln-size-weight-shards"

namespace kiln {
#define GEN_PASS_DEF_KILNSIZEWEIGHTSHARDS
#include "passes/layout/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// The packed kernels' type id for an op's format and layout, 0 when it has none.
uint32_t packedType(Operation *op) {
  const std::optional<Layout> layout = layoutOf(op);
  auto fmt = op->getAttrOfType<StorageFormatAttr>("format");
  if (!layout || !fmt)
    return 0;
  const uint32_t rows = layout == Layout::r16 ? 16 : layout == Layout::r32 ? 32 : 0;
  uint32_t base = 0;
  switch (fmt.getValue()) {
  case StorageFormat::q4_0: base = KILN_GGML_TYPE_Q4_0; break;
  case StorageFormat::q4_1: base = KILN_GGML_TYPE_Q4_1; break;
  case StorageFormat::q8_0: base = KILN_GGML_TYPE_Q8_0; break;
  case StorageFormat::q4_k: base = KILN_GGML_TYPE_Q4_K; break;
  case StorageFormat::q5_k: base = KILN_GGML_TYPE_Q5_K; break;
  case StorageFormat::q6_k: base = KILN_GGML_TYPE_Q6_K; break;
  default: return 0;
  }
  return rows ? kiln_packed_type(base, rows) : 0;
}

// Rows of the op's weight matrix (WeightReaderOpInterface: a fused linear's results side by
// side, twice its one result for SwiGLU).
int64_t weightRows(Operation *op) {
  SmallVector<WeightRead, 2> reads = weightReadsOf(op);
  return reads.empty() ? 0 : reads.front().rows;
}

struct SizeWeightShards : public impl::KilnSizeWeightShardsBase<SizeWeightShards> {
  using KilnSizeWeightShardsBase::KilnSizeWeightShardsBase;

  void runOnOperation() override {
    if (cacheKib < 64 || cacheKib > (1u << 20)) {
      getOperation().emitError() << "kiln-size-weight-shards: cache-kib " << uint64_t(cacheKib)
                                 << " is outside 64..1048576";
      return signalPassFailure();
    }
    const uint64_t budget = uint64_t(cacheKib) * 1024 / 4;
    struct Matrix {
      Operation *op;
      uint64_t groupBytes;
      int64_t groups;
    };
    SmallVector<Matrix> matrices;
    uint64_t total = 0;
    getOperation().walk([&](Operation *op) {
      if (!isa<LinearOp, LogitsOp, FusedLinearOp>(op))
        return;
      const uint32_t type = packedType(op);
      if (!type)
        return;
      const int64_t in = cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(1);
      const int64_t groupRows = int64_t(kiln_packed_rows(type));
      Matrix m{op, kiln_packed_group_bytes(type, uint64_t(in)),
               (weightRows(op) + groupRows - 1) / groupRows};
      total += m.groupBytes * uint64_t(m.groups);
      matrices.push_back(m);
    });
    if (total <= 2 * budget) // resident in half the cache
      return;
    for (const Matrix &m : matrices) {
      const int64_t shard = std::clamp<int64_t>(int64_t(budget / m.groupBytes), 1,
                                                std::max<int64_t>(m.groups, 1));
      m.op->setAttr(attr::kShardGroups,
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), shard));
      ++numSharded;
      numShards += (m.groups + shard - 1) / shard;
    }
  }
};

} // namespace
} // namespace kiln
