//===- LowerToUkernels.cpp - kiln ops -> micro-kernel calls --------------===//
//
// One small lowering per op (the table in UkernelLowering's constructor): each turns its
// op into kiln.ukernel_call of the kernels of codegen/common/ukernel_abi.h, with the
// shapes, weight offsets and memory-plan offsets as constants. The driver around them
// stores the weights and builds the entry point: the input check, then every op, with the
// row-wise tail emitted twice. kiln-convert-ukernel-calls then makes the calls llvm.call
// of the kernels declared from their prototypes (ConvertUkernelCalls.cpp).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/LowerToUkernels.h"

#include <cmath>
#include <map>
#include <tuple>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include "codegen/common/RopeAngles.h"
#include "codegen/common/ukernel_abi.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "passes/memory/MemoryPlan.h"
#include "kiln/abi.h"
#include "kiln/quant.h"
#include "kiln/quant_packed.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_KILNLOWERTOUKERNELS
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {

namespace {

static_assert(KILN_UK_ATTENTION_MAX_HEAD_DIM == 512,
              "kiln-plan-memory checks head_dim against the same bound");

static_assert(int(Layout::block) == int(RowLayout::Block) &&
                  int(Layout::rows64) == int(RowLayout::Rows) &&
                  int(Layout::r16) == int(RowLayout::R16) &&
                  int(Layout::r32) == int(RowLayout::R32),
              "kiln.layout's values are the weight layout's");

// How a matrix's rows are stored: kiln.layout from passes/layout; without it, rows padded
// to the block.
RowLayout weightLayoutOf(Operation *op) {
  return RowLayout(int(layoutOf(op).value_or(Layout::block)));
}

// Plain rows' alignment: kiln.row_align from passes/layout (the target's cache line or
// vector), 64 bytes without it.
uint64_t rowAlignOf(Operation *op) {
  auto a = op->getAttrOfType<IntegerAttr>(attr::kRowAlign);
  return a ? uint64_t(a.getInt()) : WeightLayout::kAlign;
}

int64_t features(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); }

// RoPE angle tables with the reference executor's angles (codegen/common/RopeAngles.h).
void ropeTables(float theta, int32_t rotaryDims, const float *freqFactors, uint32_t maxCtx,
                std::vector<float> &cosT, std::vector<float> &sinT) {
  const int32_t half = rotaryDims / 2;
  cosT.assign(size_t(maxCtx) * half, 0.0f);
  sinT.assign(size_t(maxCtx) * half, 0.0f);
  std::vector<float> angles(static_cast<size_t>(half));
  for (uint32_t p = 0; p < maxCtx; ++p) {
    ropeAngles(float(p), theta, rotaryDims, freqFactors, angles.data());
    for (int32_t i = 0; i < half; ++i) {
      cosT[size_t(p) * half + i] = std::cos(angles[size_t(i)]);
      sinT[size_t(p) * half + i] = std::sin(angles[size_t(i)]);
    }
  }
}

// kiln-opt's weights: zeros of the shape each op reads (embedding tables: the module's
// kiln.vocab_size rows, else the logits' width).
void addStandIns(ModuleOp module, func::FuncOp fn, WeightStore &store) {
  int64_t vocab = 0;
  if (auto v = module->getAttrOfType<IntegerAttr>(attr::kVocabSize))
    vocab = v.getInt();
  fn.walk([&](LogitsOp l) { vocab = vocab ? vocab : features(l); });
  fn.walk([&](Operation *op) {
    for (const WeightRead &w : weightReadsOf(op)) {
      const int64_t rows = w.rows ? w.rows : std::max<int64_t>(vocab, 1);
      std::vector<uint64_t> dims = {uint64_t(w.rowLength)};
      if (w.matrix || w.rows != 1) // a norm's scale and a bias are 1-D
        dims.push_back(uint64_t(rows));
      if (!store.find(w.name.str()))
        store.addOwnedF32(w.name.str(), dims, std::vector<float>(size_t(rows * w.rowLength)));
    }
  });
}

class UkernelLowering {
public:
  UkernelLowering(ModuleOp module, const memory::MemoryPlan &plan, const WeightStore &store,
                  LoweringWeights &weights);
  LogicalResult run(func::FuncOp fn);

private:
  using OpLowering = void (UkernelLowering::*)(Operation *op, Value row);
  template <typename OpTy> void add(OpLowering f) { lowerings[TypeID::get<OpTy>()] = f; }

  LogicalResult storeWeights(ArrayRef<Operation *> ops);
  void reserveWeights(ArrayRef<Operation *> ops);
  LogicalResult addWeight(Operation *op, const WeightRead &w, RowLayout layout,
                          uint64_t rowAlign);
  void emit(func::FuncOp fn);
  void emitOpEntry(Operation *op, size_t k);
  void bindEntryArgs(Block *body);
  Value loadContext();
  void emitOp(Operation *op, Value row) {
    (this->*lowerings.at(op->getName().getTypeID()))(op, row);
  }

  // One lowering per op.
  void lowerEmbed(Operation *op, Value row);
  void lowerRmsNorm(Operation *op, Value row);
  void lowerRmsNormalize(Operation *op, Value row);
  void lowerFusedLinear(Operation *op, Value row);
  void lowerLinear(Operation *op, Value row); // linear and logits
  void lowerRope(Operation *op, Value row);
  void lowerAttention(Operation *op, Value row);
  void lowerSilu(Operation *op, Value row);
  void lowerBinary(Operation *op, Value row); // mul and add
  void lowerReturn(Operation *, Value) {}

  Value i32c(int64_t v) { return b.create<LLVM::ConstantOp>(loc, b.getI32Type(), v); }
  Value i64c(int64_t v) { return b.create<LLVM::ConstantOp>(loc, b.getI64Type(), v); }
  Value f32c(float v) {
    return b.create<LLVM::ConstantOp>(loc, b.getF32Type(), b.getF32FloatAttr(v));
  }
  Value null() { return b.create<LLVM::ZeroOp>(loc, ptrTy); }
  // kiln.shard_groups (kiln-size-weight-shards) as the packed kernels' last argument, 0
  // where the target has no shards.
  Value shardGroups(Operation *op) {
    auto a = op->getAttrOfType<IntegerAttr>(attr::kShardGroups);
    return i32c(a ? a.getInt() : 0);
  }
  Value offsetPtr(Value base, uint64_t offset) {
    return b.create<LLVM::GEPOp>(loc, ptrTy, b.getI8Type(), base,
                                 ArrayRef<LLVM::GEPArg>{i64c(int64_t(offset))});
  }
  Value weightPtr(StringRef name) {
    return offsetPtr(weightsBase, weights.layout.find(name.str())->offset);
  }
  // The memory plan's offset of v's buffer (kiln.buffers of its op).
  Value bufferPtr(Value v) {
    auto result = cast<OpResult>(v);
    auto at = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(attr::kBuffers);
    return offsetPtr(scratchBase, uint64_t(at[result.getResultNumber()]));
  }
  Value workspacePtr(Operation *op) {
    return offsetPtr(scratchBase,
                     uint64_t(op->getAttrOfType<IntegerAttr>(attr::kWorkspace).getInt()));
  }
  // rows * k as i64 (element counts of [rows, k] activations).
  Value count(Value rows, int64_t k) {
    Value n64 = b.create<LLVM::SExtOp>(loc, b.getI64Type(), rows);
    return b.create<LLVM::MulOp>(loc, n64, i64c(k));
  }
  Value call(StringRef name, ValueRange args, Type result = {}) {
    return b.create<UkernelCallOp>(loc, result, FlatSymbolRefAttr::get(ctx, name), args)
        .getResult();
  }
  void forTokenPanels(Operation *op, llvm::function_ref<void(Value t0, Value count)> body);
  // body(row, 1) for one row, else forTokenPanels(op, body).
  void forRows(Operation *op, Value row, llvm::function_ref<void(Value t0, Value count)> body) {
    if (row)
      body(row, i32c(1));
    else
      forTokenPanels(op, body);
  }
  // v's rows from `row` on (all of v without one).
  Value from(Value row, Value v) { return rowsAt(bufferPtr(v), row, features(v)); }
  // Row t0 of an [n, width] f32 activation at base (base itself when t0 is null).
  Value rowsAt(Value base, Value t0, int64_t width) {
    if (!t0)
      return base;
    Value i = b.create<LLVM::MulOp>(loc, b.create<LLVM::SExtOp>(loc, b.getI64Type(), t0),
                                    i64c(width));
    return b.create<LLVM::GEPOp>(loc, ptrTy, b.getF32Type(), base, ValueRange{i});
  }
  const std::string &ropeTable(float theta, int32_t rotaryDims, DenseF32ArrayAttr factors);

  ModuleOp module;
  const memory::MemoryPlan &plan;
  const WeightStore &store;
  LoweringWeights &weights;
  MLIRContext *ctx;
  OpBuilder b;
  Location loc;
  Type ptrTy;
  llvm::DenseMap<TypeID, OpLowering> lowerings;
  std::map<std::tuple<float, int32_t, const void *>, std::string> ropeTableNames;
  llvm::DenseMap<Operation *, std::string> headMaps; // constant query-head -> KV-head maps
  Value weightsBase, scratchBase, kvBase, ctxArg, tokensArg, positionsArg, nArg, logitsArg;
};

UkernelLowering::UkernelLowering(ModuleOp module, const memory::MemoryPlan &plan,
                                 const WeightStore &store, LoweringWeights &weights)
    : module(module), plan(plan), store(store), weights(weights),
      ctx(module.getContext()), b(ctx), loc(UnknownLoc::get(ctx)),
      ptrTy(LLVM::LLVMPointerType::get(ctx)) {
  add<EmbedOp>(&UkernelLowering::lowerEmbed);
  add<RmsNormOp>(&UkernelLowering::lowerRmsNorm);
  add<RmsNormalizeOp>(&UkernelLowering::lowerRmsNormalize);
  add<FusedLinearOp>(&UkernelLowering::lowerFusedLinear);
  add<LinearOp>(&UkernelLowering::lowerLinear);
  add<LogitsOp>(&UkernelLowering::lowerLinear);
  add<RopeOp>(&UkernelLowering::lowerRope);
  add<AttentionOp>(&UkernelLowering::lowerAttention);
  add<SiluOp>(&UkernelLowering::lowerSilu);
  add<MulOp>(&UkernelLowering::lowerBinary);
  add<AddOp>(&UkernelLowering::lowerBinary);
  add<func::ReturnOp>(&UkernelLowering::lowerReturn);
}

// The name of the cos/sin tables of (theta, rotary dims, frequency factors), made on
// first use.
const std::string &UkernelLowering::ropeTable(float theta, int32_t rotaryDims,
                                              DenseF32ArrayAttr factors) {
  auto key = std::make_tuple(theta, rotaryDims, factors.getAsOpaquePointer());
  auto it = ropeTableNames.find(key);
  if (it != ropeTableNames.end())
    return it->second;
  std::string name = "rope." + std::to_string(ropeTableNames.size());
  std::vector<float> c, s;
  ropeTables(theta, rotaryDims, factors ? factors.asArrayRef().data() : nullptr, plan.maxCtx,
             c, s);
  weights.layout.addF32(name + ".cos", {uint64_t(rotaryDims / 2), plan.maxCtx}, c);
  weights.layout.addF32(name + ".sin", {uint64_t(rotaryDims / 2), plan.maxCtx}, s);
  return ropeTableNames[key] = name;
}

// Emits body(t0, count) once per kiln.token_panel tokens of the call's n (passes/layout
// kiln-size-prefill-panels), or once with (null, n) for an op without panels.
void UkernelLowering::forTokenPanels(Operation *op,
                                     llvm::function_ref<void(Value t0, Value count)> body) {
  auto panelAttr = op->getAttrOfType<IntegerAttr>(attr::kTokenPanel);
  if (!panelAttr) {
    body(Value(), nArg);
    return;
  }
  Region *region = b.getInsertionBlock()->getParent();
  Block *header = new Block(), *loop = new Block(), *after = new Block();
  region->push_back(header);
  region->push_back(loop);
  region->push_back(after);
  Value t0 = header->addArgument(b.getI32Type(), loc);
  b.create<LLVM::BrOp>(loc, ValueRange{i32c(0)}, header);
  b.setInsertionPointToStart(header);
  b.create<LLVM::CondBrOp>(loc, b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::slt, t0, nArg),
                           loop, after);
  b.setInsertionPointToStart(loop);
  Value panel = i32c(panelAttr.getInt());
  Value left = b.create<LLVM::SubOp>(loc, nArg, t0);
  Value count = b.create<LLVM::SelectOp>(
      loc, b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::slt, left, panel), left, panel);
  body(t0, count);
  b.create<LLVM::BrOp>(loc, ValueRange{b.create<LLVM::AddOp>(loc, t0, panel).getResult()},
                       header);
  b.setInsertionPointToStart(after);
}

// Sizes the weights section before it is filled, so it never reallocates: growing by
// doubling copied every weight so far each time (a Llama-2-7B q4_0 compile: 6.23 GB of
// anonymous memory at its peak for 3.79 GB of weights). Matrices are sized from their
// ops' shapes (derived weights do not exist yet), the rest from the store, plus a margin
// for the RoPE tables. Over-counting costs address space only.
void UkernelLowering::reserveWeights(ArrayRef<Operation *> ops) {
  uint64_t bytes = 1 << 20;
  for (Operation *op : ops)
    for (const WeightRead &w : weightReadsOf(op)) {
      const WeightView *v = w.matrix ? nullptr : store.find(w.name.str());
      if (w.matrix)
        bytes += WeightLayout::storedBytes(w.format, weightLayoutOf(op), uint64_t(w.rows),
                                           uint64_t(w.rowLength), rowAlignOf(op)) + 128;
      else if (v)
        bytes += WeightLayout::storedBytes(w.format, RowLayout::Block, v->numRows(),
                                           v->rowLength()) + 128;
    }
  weights.layout.reserveBytes(bytes);
}

// The layout packs weight w: built first when the store does not hold it and the caller
// builds weights on demand (LoweringWeights::materialize), released after.
LogicalResult UkernelLowering::addWeight(Operation *op, const WeightRead &w, RowLayout layout,
                                         uint64_t rowAlign) {
  const std::string name = w.name.str();
  std::string error;
  const bool onDemand = weights.materialize && !weights.layout.find(name) && !store.find(name);
  if (onDemand && !weights.materialize(name, error))
    return op->emitOpError(error);
  const bool ok = weights.layout.addWeight(store, name, w.format, error, layout, rowAlign);
  if (onDemand && weights.release)
    weights.release(name);
  if (!ok)
    return op->emitOpError(error);
  return success();
}

// Every weight in op order (the section's order), RoPE tables where their op first asks.
LogicalResult UkernelLowering::storeWeights(ArrayRef<Operation *> ops) {
  reserveWeights(ops);
  // An embedding table a classifier reads in 16-row groups (a tied table; kiln-assign-layout)
  // is stored that way for both: embed decodes its rows from the groups.
  llvm::StringSet<> r16Tables;
  for (Operation *op : ops)
    if (isa<LogitsOp>(op) && weightLayoutOf(op) == RowLayout::R16)
      for (const WeightRead &w : weightReadsOf(op))
        if (w.matrix && kiln_packed_type(w.format, 16))
          r16Tables.insert(w.name);
  for (Operation *op : ops) {
    for (const WeightRead &w : weightReadsOf(op)) {
      const bool r16Table = isa<EmbedOp>(op) && r16Tables.contains(w.name);
      if (failed(w.matrix ? addWeight(op, w, weightLayoutOf(op), rowAlignOf(op))
                 : r16Table ? addWeight(op, w, RowLayout::R16, WeightLayout::kAlign)
                            : addWeight(op, w, RowLayout::Block, WeightLayout::kAlign)))
        return failure();
      const PackedTensor *t = weights.layout.find(w.name.str());
      if (isa<FusedLinearOp>(op) &&
          (int64_t(t->rows) != w.rows || int64_t(t->rowLength) != w.rowLength))
        return op->emitOpError() << "weight '" << w.name << "' is not [" << w.rows << ", "
                                 << w.rowLength << "]";
      if (!w.matrix && isa<LinearOp>(op) &&
          (t->shape.size() != 1 || int64_t(t->shape[0]) != w.rowLength))
        return op->emitOpError() << "bias '" << w.name << "' must be a 1-D [" << w.rowLength
                                 << "] f32 vector";
    }
    if (auto r = dyn_cast<RopeOp>(op))
      ropeTable(r.getTheta().convertToFloat(), int32_t(r.getRotaryDims()),
                r.getFreqFactorsAttr());
    if (auto a = dyn_cast<AttentionOp>(op); a && a.getRopeRotaryDimsAttr())
      ropeTable(a.getRopeThetaAttr().getValue().convertToFloat(),
                int32_t(*a.getRopeRotaryDims()), a.getRopeFreqFactorsAttr());
  }
  return success();
}

void UkernelLowering::bindEntryArgs(Block *body) {
  ctxArg = body->getArgument(0);
  tokensArg = body->getArgument(1);
  positionsArg = body->getArgument(2);
  nArg = body->getArgument(3);
  logitsArg = body->getArgument(4);
}

// Loads the bases the kernels' pointers start from, at the insertion point; returns
// ctx->last_logits_only.
Value UkernelLowering::loadContext() {
  Type i32 = b.getI32Type();
  // kiln_exec_ctx_t = {u32 abi, u32 threads, weights, scratch, kv, parallel_for, pool,
  // u32 last_logits_only}
  auto ctxTy =
      LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, ptrTy, ptrTy, ptrTy, ptrTy, ptrTy, i32});
  auto field = [&](int32_t i) {
    Value p = b.create<LLVM::GEPOp>(loc, ptrTy, ctxTy, ctxArg, ArrayRef<LLVM::GEPArg>{0, i});
    return b.create<LLVM::LoadOp>(loc, ptrTy, p).getResult();
  };
  weightsBase = field(2);
  scratchBase = field(3);
  kvBase = field(4);
  return b.create<LLVM::LoadOp>(
      loc, i32, b.create<LLVM::GEPOp>(loc, ptrTy, ctxTy, ctxArg, ArrayRef<LLVM::GEPArg>{0, 7}));
}

void UkernelLowering::emit(func::FuncOp fn) {
  Type i32 = b.getI32Type();
  b.setInsertionPointToEnd(module.getBody());

  // Constant query-head -> KV-head maps of attention ops that carry one.
  fn.walk([&](AttentionOp a) {
    if (auto map = a.getKvHeadMap()) {
      std::string name = "kiln_kv_head_map_" + std::to_string(headMaps.size());
      auto ty = LLVM::LLVMArrayType::get(i32, map->size());
      b.create<LLVM::GlobalOp>(loc, ty, /*isConstant=*/true, LLVM::Linkage::Internal, name,
                               b.getI32TensorAttr(*map));
      headMaps[a] = name;
    }
  });

  auto entry = b.create<LLVM::LLVMFuncOp>(
      loc, KILN_ABI_ENTRY, LLVM::LLVMFunctionType::get(i32, {ptrTy, ptrTy, ptrTy, i32, ptrTy}));
  Block *body = entry.addEntryBlock(b);
  bindEntryArgs(body);
  Block *fail = entry.addBlock(), *run = entry.addBlock();

  // Inputs are checked once, up front; the kernels trust them.
  b.setInsertionPointToStart(body);
  Value check = call("kiln_uk_check_inputs",
                     {tokensArg, positionsArg, nArg, i32c(weights.vocab), i32c(plan.maxCtx),
                      i32c(plan.maxBatch)},
                     i32);
  Value bad = b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::ne, check, i32c(0));
  b.create<LLVM::CondBrOp>(loc, bad, fail, run);
  b.setInsertionPointToStart(fail);
  b.create<LLVM::ReturnOp>(loc, i32c(-1));

  b.setInsertionPointToStart(run);
  Value lastLogitsOnly = loadContext();

  // Every op after the last one that mixes rows (attention) works row by row and feeds
  // only the logits: with ctx->last_logits_only that tail runs on row n - 1 alone, so it
  // is emitted twice, behind one branch (llama.cpp drops those rows the same way).
  std::vector<Operation *> ops;
  for (Operation &op : fn.getBody().front())
    ops.push_back(&op);
  size_t tail = ops.size();
  while (tail > 0 && isa<LinearOp, FusedLinearOp, LogitsOp, RmsNormOp, RmsNormalizeOp, SiluOp,
                         MulOp, AddOp, func::ReturnOp>(ops[tail - 1]))
    --tail;
  for (size_t i = 0; i < tail; ++i)
    emitOp(ops[i], Value());
  Region *region = b.getInsertionBlock()->getParent();
  Block *lastOnly = new Block(), *all = new Block();
  region->push_back(lastOnly);
  region->push_back(all);
  b.create<LLVM::CondBrOp>(
      loc, b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::ne, lastLogitsOnly, i32c(0)),
      lastOnly, all);
  b.setInsertionPointToStart(lastOnly);
  Value lastRow = b.create<LLVM::SubOp>(loc, nArg, i32c(1));
  for (size_t i = tail; i < ops.size(); ++i)
    emitOp(ops[i], lastRow);
  b.create<LLVM::ReturnOp>(loc, i32c(0));
  b.setInsertionPointToStart(all);
  for (size_t i = tail; i < ops.size(); ++i)
    emitOp(ops[i], Value());
  b.create<LLVM::ReturnOp>(loc, i32c(0));
  if (weights.opEntries)
    for (size_t i = 0; i + 1 < ops.size(); ++i) // every op but the return
      emitOpEntry(ops[i], i);
}

// kiln_model_op_<k>: op k alone, every row, with the entry's arguments and no input check
// (the caller ran the entry's checks, or a GPU program ran the ops before it).
void UkernelLowering::emitOpEntry(Operation *op, size_t k) {
  Type i32 = b.getI32Type();
  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<LLVM::LLVMFuncOp>(
      loc, std::string(KILN_OP_ENTRY_PREFIX) + std::to_string(k),
      LLVM::LLVMFunctionType::get(i32, {ptrTy, ptrTy, ptrTy, i32, ptrTy}));
  Block *body = fn.addEntryBlock(b);
  bindEntryArgs(body);
  b.setInsertionPointToStart(body);
  loadContext();
  emitOp(op, Value());
  b.create<LLVM::ReturnOp>(loc, i32c(0));
}

void UkernelLowering::lowerEmbed(Operation *op, Value) {
  auto e = cast<EmbedOp>(op);
  const PackedTensor *t = weights.layout.find(e.getWeight().str());
  call("kiln_uk_embed", {ctxArg, i32c(t->format), weightPtr(e.getWeight()),
                         i64c(int64_t(t->rowStride)), i32c(features(e)), tokensArg, nArg,
                         bufferPtr(e)});
}

void UkernelLowering::lowerRmsNorm(Operation *op, Value row) {
  auto n = cast<RmsNormOp>(op);
  const PackedTensor *t = weights.layout.find(n.getWeight().str());
  call("kiln_uk_rms_norm", {i32c(t->format), from(row, n.getInput()), weightPtr(n.getWeight()),
                            row ? i32c(1) : nArg, i32c(features(n)),
                            f32c(n.getEps().convertToFloat()), from(row, n.getResult())});
}

void UkernelLowering::lowerRmsNormalize(Operation *op, Value row) {
  auto n = cast<RmsNormalizeOp>(op);
  call("kiln_uk_rms_norm", {i32c(KILN_GGML_TYPE_F32), from(row, n.getInput()), null(),
                            row ? i32c(1) : nArg, i32c(features(n)),
                            f32c(n.getEps().convertToFloat()), from(row, n.getResult())});
}

void UkernelLowering::lowerFusedLinear(Operation *op, Value row) {
  auto f = cast<FusedLinearOp>(op);
  const PackedTensor *t = weights.layout.find(f.getWeight().str());
  forRows(op, row, [&](Value t0, Value count) {
    Value none = null();
    SmallVector<Value, 6> segs; // (y, width) per segment, unused ones (NULL, 0)
    for (unsigned k = 0; k < 3; ++k) {
      const bool used = k < f.getNumResults();
      segs.push_back(used ? rowsAt(bufferPtr(f.getResult(k)), t0, features(f.getResult(k)))
                          : none);
      segs.push_back(i32c(used ? features(f.getResult(k)) : 0));
    }
    // the residual has the first segment's rows
    Value residual = f.getResidual()
                         ? rowsAt(bufferPtr(f.getResidual()), t0, features(f.getResult(0)))
                         : none;
    SmallVector<Value, 18> args = {
        ctxArg, i32c(t->format), rowsAt(bufferPtr(f.getInput()), t0, features(f.getInput())),
        count, i32c(features(f.getInput())), weightPtr(f.getWeight()),
        i64c(int64_t(t->rowStride)), i32c(int32_t(t->rows)), segs[0], segs[1], segs[2],
        segs[3], segs[4], segs[5], residual, i32c(f.getSwiglu() ? 1 : 0)};
    if (kiln_is_packed(t->format)) {
      args.push_back(workspacePtr(op));
      args.push_back(shardGroups(op));
      call("kiln_uk_linear_packed_fused", args);
    } else {
      call("kiln_uk_linear_fused", args);
    }
  });
}

void UkernelLowering::lowerLinear(Operation *op, Value row) {
  Value input = op->getOperand(0), result = op->getResult(0);
  std::string name = op->getAttrOfType<StringAttr>("weight").str();
  const PackedTensor *t = weights.layout.find(name);
  auto dstOf = [&] { return isa<LogitsOp>(op) ? logitsArg : bufferPtr(result); };
  forRows(op, row, [&](Value t0, Value count) {
    Value x = rowsAt(bufferPtr(input), t0, features(input));
    Value y = rowsAt(dstOf(), t0, features(result));
    if (kiln_is_packed(t->format))
      call("kiln_uk_linear_packed",
           {ctxArg, i32c(t->format), x, count, i32c(features(input)), weightPtr(name),
            i64c(int64_t(t->rowStride)), i32c(features(result)), y, workspacePtr(op),
            shardGroups(op)});
    else
      call("kiln_uk_linear", {ctxArg, i32c(t->format), x, count, i32c(features(input)),
                              weightPtr(name), i64c(int64_t(t->rowStride)),
                              i32c(features(result)), y});
    if (auto bias = op->getAttrOfType<StringAttr>("bias"))
      call("kiln_uk_add_bias", {y, weightPtr(bias.getValue()), count, i32c(features(result))});
  });
}

void UkernelLowering::lowerRope(Operation *op, Value) {
  auto r = cast<RopeOp>(op);
  const std::string &table = ropeTable(r.getTheta().convertToFloat(),
                                       int32_t(r.getRotaryDims()), r.getFreqFactorsAttr());
  call("kiln_uk_rope", {bufferPtr(r), nArg, i32c(features(r)), i32c(r.getHeadDim()),
                        i32c(r.getRotaryDims()),
                        i32c(r.getStyle() == RopeStyle::rotate_half ? 1 : 0), positionsArg,
                        weightPtr(table + ".cos"), weightPtr(table + ".sin")});
}

void UkernelLowering::lowerAttention(Operation *op, Value) {
  auto a = cast<AttentionOp>(op);
  ArrayRef<int64_t> slots = a->getAttrOfType<DenseI64ArrayAttr>(attr::kKvSlots).asArrayRef();
  Value map = headMaps.count(a)
                  ? b.create<LLVM::AddressOfOp>(loc, ptrTy, headMaps[a]).getResult()
                  : null();
  // Fused RoPE (kiln-fuse-rope-into-attention): the kernel rotates q and k itself.
  int32_t rotDims = 0, rotHalf = 0;
  Value cosT = null(), sinT = null();
  if (a.getRopeRotaryDimsAttr()) {
    rotDims = int32_t(*a.getRopeRotaryDims());
    rotHalf = *a.getRopeStyle() == RopeStyle::rotate_half ? 1 : 0;
    const std::string &table =
        ropeTable(a.getRopeThetaAttr().getValue().convertToFloat(), rotDims,
                  a.getRopeFreqFactorsAttr());
    cosT = weightPtr(table + ".cos");
    sinT = weightPtr(table + ".sin");
  }
  call("kiln_uk_attention",
       {ctxArg, bufferPtr(a.getQ()), bufferPtr(a.getK()), bufferPtr(a.getV()), nArg,
        positionsArg, i32c(a.getNumHeads()), i32c(a.getNumKvHeads()), i32c(a.getHeadDim()),
        f32c(a.getScale().convertToFloat()), map, i32c(int64_t(plan.kv.k)),
        i32c(int64_t(plan.kv.v)), offsetPtr(kvBase, uint64_t(slots[0])),
        plan.kv.k == KvElem::I8 ? offsetPtr(kvBase, uint64_t(slots[1])) : null(),
        offsetPtr(kvBase, uint64_t(slots[2])), i32c(plan.maxCtx), i32c(rotDims), i32c(rotHalf),
        cosT, sinT, workspacePtr(op), bufferPtr(a)});
}

void UkernelLowering::lowerSilu(Operation *op, Value row) {
  auto s = cast<SiluOp>(op);
  call("kiln_uk_silu",
       {from(row, s.getInput()), count(row ? i32c(1) : nArg, features(s)),
        from(row, s.getResult())});
}

void UkernelLowering::lowerBinary(Operation *op, Value row) {
  call(isa<MulOp>(op) ? "kiln_uk_mul" : "kiln_uk_add",
       {from(row, op->getOperand(0)), from(row, op->getOperand(1)),
        count(row ? i32c(1) : nArg, features(op->getResult(0))), from(row, op->getResult(0))});
}

LogicalResult UkernelLowering::run(func::FuncOp fn) {
  std::vector<Operation *> ops;
  for (Operation &op : fn.getBody().front()) {
    if (!lowerings.count(op.getName().getTypeID()))
      return op.emitOpError("has no lowering to the CPU micro-kernels");
    if (!isa<func::ReturnOp, LogitsOp>(op) && !op.hasAttr(attr::kBuffers))
      return op.emitOpError("has no memory plan (run kiln-plan-memory first)");
    ops.push_back(&op);
  }
  fn.walk([&](LogitsOp l) { weights.vocab = uint32_t(features(l)); });
  if (failed(storeWeights(ops)))
    return failure();
  emit(fn);
  for (Operation *op : ops)
    for (const WeightRead &w : weightReadsOf(op)) {
      const PackedTensor *t = weights.layout.find(w.name.str());
      weights.bytesPerToken += isa<EmbedOp>(op) ? t->rowStride : t->size;
    }
  return success();
}

struct KilnLowerToUkernelsPass
    : impl::KilnLowerToUkernelsBase<KilnLowerToUkernelsPass> {
  KilnLowerToUkernelsPass() = default;
  explicit KilnLowerToUkernelsPass(LoweringWeights &w) : given(&w) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>("forward");
    if (!fn || fn.getNumArguments() != 2 || fn.getNumResults() != 1 || fn.getBody().empty()) {
      module.emitError("the module has no @forward(tokens, positions) -> logits");
      return signalPassFailure();
    }
    FailureOr<memory::MemoryPlan> plan = memory::readMemoryPlan(module);
    if (failed(plan))
      return signalPassFailure();
    LoweringWeights own;
    WeightStore standIns;
    LoweringWeights &w = given ? *given : own;
    if (!w.store)
      addStandIns(module, fn, standIns);
    if (failed(UkernelLowering(module, *plan, w.store ? *w.store : standIns, w).run(fn)))
      return signalPassFailure();
    fn.erase();
    if (failed(module.verify())) {
      module.emitError("internal error: the lowered module does not verify");
      return signalPassFailure();
    }
  }

  LoweringWeights *given = nullptr;
};

} // namespace

std::unique_ptr<Pass> createKilnLowerToUkernels(LoweringWeights &weights) {
  return std::make_unique<KilnLowerToUkernelsPass>(weights);
}

} // namespace kiln::codegen
