//===- PlanMemory.cpp - static scratch and KV-cache placement -------------===//
//
// Every buffer of @forward gets a fixed offset at compile time: the runtime allocates the
// scratch block and the KV cache once (their sizes are in the artifact's memory plan) and
// the generated code addresses them with constants. Scratch buffers are placed by live
// range (ScratchPlan.h); the order requests are made in is part of the result (ties in
// size keep it), so it follows the ops.
//===----------------------------------------------------------------------===//
#include "passes/memory/Passes.h"

#include <algorithm>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "dialects/kiln/IR/KvFormat.h"
#include "passes/memory/MemoryPlan.h"
#include "passes/memory/ScratchPlan.h"
#include "kiln/quant_packed.h"

#define DEBUG_TYPE "kiln-plan-memory"

namespace kiln {
#define GEN_PASS_DEF_KILNPLANMEMORY
#include "passes/memory/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// Largest head_dim the CPU attention kernel takes (on-stack head buffers):
// KILN_UK_ATTENTION_MAX_HEAD_DIM of codegen/common/ukernel_abi.h, checked there.
constexpr int64_t kMaxHeadDim = 512;

int64_t features(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); }

uint64_t align64(uint64_t x) { return (x + 63) & ~uint64_t(63); }
uint64_t elemBytes(KvElem e) { return e == KvElem::F32 ? 4u : e == KvElem::F16 ? 2u : 1u; }

struct KilnPlanMemoryPass : impl::KilnPlanMemoryBase<KilnPlanMemoryPass> {
  using KilnPlanMemoryBase::KilnPlanMemoryBase;
  void runOnOperation() override;
  LogicalResult plan(func::FuncOp fn, const KvFormat &kv, memory::MemoryPlan &out);
};

LogicalResult KilnPlanMemoryPass::plan(func::FuncOp fn, const KvFormat &kv,
                                       memory::MemoryPlan &out) {
  std::vector<Operation *> ops;
  for (Operation &op : fn.getBody().front())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, int64_t> index;
  for (size_t i = 0; i < ops.size(); ++i)
    index[ops[i]] = int64_t(i);
  auto lastUse = [&](Value v) {
    int64_t last = v.getDefiningOp() ? index[v.getDefiningOp()] : 0;
    for (Operation *user : v.getUsers())
      last = std::max(last, index[user]);
    return last;
  };

  // One request per buffer, with what owns it: a result, or an op's workspace.
  std::vector<memory::BufferRequest> requests;
  std::vector<Value> ownerValue;
  std::vector<Operation *> ownerOp;
  llvm::DenseMap<Value, Value> aliasOf; // rope results and in-place residual sums
  auto request = [&](uint64_t bytes, int64_t first, int64_t last, Value v, Operation *op) {
    requests.push_back({bytes, first, last});
    ownerValue.push_back(v);
    ownerOp.push_back(op);
  };
  const uint64_t rowsBytes = uint64_t(maxBatch) * 4;
  auto result = [&](Value v, int64_t i) {
    request(rowsBytes * uint64_t(features(v)), i, lastUse(v), v, nullptr);
  };
  auto workspace = [&](Operation *op, uint64_t bytes, int64_t i) {
    request(bytes, i, i, Value(), op);
  };
  auto packedInput = [&](Operation *op, Value input, int64_t i) {
    if (readsRowGroups(op))
      workspace(op, uint64_t(maxBatch) * kiln_packed_act_stride(uint64_t(features(input))), i);
  };

  Builder b(&getContext());
  for (size_t n = 0; n < ops.size(); ++n) {
    Operation *op = ops[n];
    const int64_t i = int64_t(n);
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto l = dyn_cast<LogitsOp>(op)) {
      packedInput(op, l.getInput(), i);
      if (!l->hasOneUse() || !isa<func::ReturnOp>(*l->getUsers().begin()))
        return l.emitOpError("must be @forward's returned value (it is written to the "
                             "caller's logits buffer)");
      continue;
    }
    if (auto l = dyn_cast<LinearOp>(op)) {
      packedInput(op, l.getInput(), i);
      result(l, i);
    } else if (auto f = dyn_cast<FusedLinearOp>(op)) {
      packedInput(op, f.getInput(), i);
      // The residual's buffer becomes the output when this op is its last reader.
      Value res = f.getResidual();
      if (res && res.getDefiningOp() && lastUse(res) == i) {
        aliasOf[f.getResult(0)] = aliasOf.count(res) ? aliasOf.lookup(res) : res;
        continue;
      }
      for (Value r : f.getResults())
        result(r, i);
    } else if (auto r = dyn_cast<RopeOp>(op)) {
      if (!r.getInput().hasOneUse())
        return r.emitOpError("rotates in place, so its input must have no other use");
      aliasOf[r.getResult()] = r.getInput();
    } else if (auto a = dyn_cast<AttentionOp>(op)) {
      if (int64_t(a.getHeadDim()) > kMaxHeadDim)
        return a.emitOpError() << "head_dim " << a.getHeadDim()
                               << " exceeds the CPU kernels' " << kMaxHeadDim;
      const uint64_t kvHeads = a.getNumKvHeads(), headDim = a.getHeadDim();
      const uint64_t rows = uint64_t(maxCtx) * kvHeads * headDim;
      int64_t slots[3] = {0, 0, 0}; // K, int8 K scales, V
      slots[0] = int64_t(out.kvBytes);
      out.kvBytes = align64(out.kvBytes + rows * elemBytes(kv.k));
      if (kv.k == KvElem::I8) {
        slots[1] = int64_t(out.kvBytes);
        out.kvBytes = align64(out.kvBytes + uint64_t(maxCtx) * kvHeads * 4);
      }
      slots[2] = int64_t(out.kvBytes);
      out.kvBytes = align64(out.kvBytes + rows * elemBytes(kv.v));
      out.kvBytesPerToken += kvBytesPerTokenLayer(kv, kvHeads, headDim);
      a->setAttr(attr::kKvSlots, b.getDenseI64ArrayAttr(slots));
      workspace(op, uint64_t(a.getNumHeads()) * maxCtx * 4, i); // scores
      result(a, i);
    } else if (isa<EmbedOp, RmsNormOp, RmsNormalizeOp, SiluOp, MulOp, AddOp>(op)) {
      result(op->getResult(0), i);
    } else {
      return op->emitOpError("has no memory-planning rule (kiln-plan-memory)");
    }
  }
  // A rope result extends its input buffer's life to the result's last use.
  for (auto &[res, input] : aliasOf)
    for (size_t r = 0; r < ownerValue.size(); ++r)
      if (ownerValue[r] == input)
        requests[r].lastUse = std::max(requests[r].lastUse, lastUse(res));

  const memory::ScratchPlan sp = memory::planScratch(requests);
  llvm::DenseMap<Value, uint64_t> offsets;
  for (size_t r = 0; r < requests.size(); ++r) {
    if (ownerValue[r])
      offsets[ownerValue[r]] = sp.offsets[r];
    else
      ownerOp[r]->setAttr(attr::kWorkspace, b.getI64IntegerAttr(int64_t(sp.offsets[r])));
  }
  for (auto &[res, input] : aliasOf)
    offsets[res] = offsets.lookup(input);
  for (Operation *op : ops) {
    if (op->getNumResults() == 0 || isa<LogitsOp>(op))
      continue;
    SmallVector<int64_t> at;
    for (Value v : op->getResults())
      at.push_back(int64_t(offsets.lookup(v)));
    op->setAttr(attr::kBuffers, b.getDenseI64ArrayAttr(at));
  }
  out.scratchBytes = sp.totalBytes;
  out.scratchBytesWithoutReuse = sp.naiveBytes;
  return success();
}

void KilnPlanMemoryPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.getNumArguments() != 2 || fn.getNumResults() != 1 || fn.getBody().empty()) {
    module.emitError("the module has no @forward(tokens, positions) -> logits");
    return signalPassFailure();
  }
  if (maxCtx == 0 || maxBatch == 0 || maxBatch > maxCtx) {
    module.emitError() << "kiln-plan-memory: max-ctx (" << unsigned(maxCtx) << ") and max-batch ("
                       << unsigned(maxBatch) << ") must be positive, batch <= context";
    return signalPassFailure();
  }
  memory::MemoryPlan plan;
  plan.maxCtx = maxCtx;
  plan.maxBatch = maxBatch;
  std::string error;
  if (!parseKvFormat(kv, plan.kv, error)) {
    module.emitError() << "kiln-plan-memory: " << error;
    return signalPassFailure();
  }
  if (failed(this->plan(fn, plan.kv, plan)))
    return signalPassFailure();
  memory::writeMemoryPlan(module, plan);
  scratchBytes = plan.scratchBytes;
  kvBytes = plan.kvBytes;
}

} // namespace
} // namespace kiln
