#include "codegen/cpu/LowerToUkernels.h"

#include <cmath>
#include <map>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include "codegen/common/MemoryPlan.h"
#include "codegen/common/ukernel_abi.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "kiln/abi.h"
#include "kiln/quant.h"
#include "kiln/quant_packed.h"

using namespace mlir;

namespace kiln::codegen {

namespace {

// The layout an op's kiln.layout value names ("r16", "r32", "rows64", "block" for q3_0).
RowLayout rowLayoutOf(StringRef value) {
  return value == "r16"     ? RowLayout::R16
         : value == "r32"   ? RowLayout::R32
         : value == "block" ? RowLayout::Block
                            : RowLayout::Rows;
}

// Plain rows' alignment: kiln.row_align from passes/layout (the target's cache line or
// vector), 64 bytes without it.
uint64_t rowAlignOf(Operation *op) {
  auto a = op->getAttrOfType<IntegerAttr>("kiln.row_align");
  return a ? uint64_t(a.getInt()) : WeightLayout::kAlign;
}

int64_t features(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); }

// The storage format of an embed / linear / logits / fused_linear op's weight.
uint32_t formatOf(Operation *op) {
  return uint32_t(op->getAttrOfType<StorageFormatAttr>("format").getValue());
}

// How a linear's weight rows are stored: kiln.layout from passes/layout; without it, rows
// padded to the block.
RowLayout weightLayoutOf(Operation *op) {
  auto l = op->getAttrOfType<StringAttr>("kiln.layout");
  return l ? rowLayoutOf(l.getValue()) : RowLayout::Block;
}

// An rms_norm's scale format: f32 unless precision assignment chose f16.
uint32_t normFormatOf(RmsNormOp n) {
  return n.getFormat() ? uint32_t(*n.getFormat()) : uint32_t(KILN_GGML_TYPE_F32);
}

// Rows of a fused_linear's stacked weight: every result's, twice for SwiGLU (gate and up).
int64_t fusedRows(FusedLinearOp f) {
  int64_t rows = 0;
  for (Value result : f.getResults())
    rows += features(result) * (f.getSwiglu() ? 2 : 1);
  return rows;
}

// RoPE angle tables exactly as the reference executor computes the angles.
void ropeTables(float theta, int32_t rotaryDims, uint32_t maxCtx, std::vector<float> &cosT,
                std::vector<float> &sinT) {
  const int32_t half = rotaryDims / 2;
  const float thetaScale = std::pow(theta, -2.0f / float(rotaryDims));
  cosT.assign(size_t(maxCtx) * half, 0.0f);
  sinT.assign(size_t(maxCtx) * half, 0.0f);
  for (uint32_t p = 0; p < maxCtx; ++p) {
    float angle = float(p);
    for (int32_t i = 0; i < half; ++i) {
      cosT[size_t(p) * half + i] = std::cos(angle);
      sinT[size_t(p) * half + i] = std::sin(angle);
      angle *= thetaScale;
    }
  }
}

class Lowering {
public:
  Lowering(ModuleOp src, const WeightStore &store, const LoweringOptions &opts,
           LoweredModel &out)
      : src(src), store(store), opts(opts), out(out), ctx(src.getContext()), b(ctx),
        loc(UnknownLoc::get(ctx)) {}
  bool run(std::string &error);

private:
  void reserveWeights(ArrayRef<Operation *> ops);
  bool plan(func::FuncOp fn, std::string &error);
  // The layout packs weight `name`: built first when the store does not hold it and the
  // caller builds weights on demand (LoweringOptions::materialize), released after.
  bool addWeight(const std::string &name, uint32_t format, std::string &error,
                 RowLayout layout = RowLayout::Block,
                 uint64_t rowAlign = WeightLayout::kAlign) {
    const bool onDemand = opts.materialize && !out.weights.find(name) && !store.find(name);
    if (onDemand && !opts.materialize(name, error))
      return false;
    const bool ok = out.weights.addWeight(store, name, format, error, layout, rowAlign);
    if (onDemand && opts.release)
      opts.release(name);
    return ok;
  }
  void emit(func::FuncOp fn);
  LLVM::LLVMFuncOp declare(StringRef name, Type result, ArrayRef<Type> args);
  Value i32c(int64_t v) { return b.create<LLVM::ConstantOp>(loc, b.getI32Type(), v); }
  // kiln.shard_groups (kiln-size-weight-shards) as the packed kernels' last argument, 0
  // where the target has no shards.
  Value shardGroups(Operation *op) {
    auto a = op->getAttrOfType<IntegerAttr>("kiln.shard_groups");
    return i32c(a ? a.getInt() : 0);
  }
  Value i64c(int64_t v) { return b.create<LLVM::ConstantOp>(loc, b.getI64Type(), v); }
  Value f32c(float v) {
    return b.create<LLVM::ConstantOp>(loc, b.getF32Type(), b.getF32FloatAttr(v));
  }
  Value offsetPtr(Value base, uint64_t offset) {
    return b.create<LLVM::GEPOp>(loc, ptrTy, b.getI8Type(), base,
                                 ArrayRef<LLVM::GEPArg>{i64c(int64_t(offset))});
  }
  Value weightPtr(StringRef name) { return offsetPtr(weightsBase, out.weights.find(name.str())->offset); }
  Value bufferPtr(Value v) { return offsetPtr(scratchBase, offsets.lookup(v)); }
  // rows * k as i64 (element counts of [rows, k] activations).
  Value count(Value rows, int64_t k) {
    Value n64 = b.create<LLVM::SExtOp>(loc, b.getI64Type(), rows);
    return b.create<LLVM::MulOp>(loc, n64, i64c(k));
  }
  void call(StringRef name, ValueRange args) {
    b.create<LLVM::CallOp>(loc, kernels.at(name.str()), args);
  }
  void forTokenPanels(Operation *op, llvm::function_ref<void(Value t0, Value count)> body);
  // body(row, 1) for one row, else forTokenPanels(op, body).
  void forRows(Operation *op, Value row, llvm::function_ref<void(Value t0, Value count)> body) {
    if (row)
      body(row, i32c(1));
    else
      forTokenPanels(op, body);
  }
  // Emits op for all n rows, or for `row` alone when it is set (the last-row tail).
  void emitOp(Operation *op, Value row);
  // Row t0 of an [n, width] f32 activation at base (base itself when t0 is null).
  Value rowsAt(Value base, Value t0, int64_t width) {
    if (!t0)
      return base;
    Value i = b.create<LLVM::MulOp>(loc, b.create<LLVM::SExtOp>(loc, b.getI64Type(), t0),
                                    i64c(width));
    return b.create<LLVM::GEPOp>(loc, ptrTy, b.getF32Type(), base, ValueRange{i});
  }

  ModuleOp src;
  const WeightStore &store;
  const LoweringOptions &opts;
  LoweredModel &out;
  MLIRContext *ctx;
  OpBuilder b;
  Location loc;
  Type ptrTy;

  llvm::DenseMap<Value, uint64_t> offsets;     // scratch offset of each activation
  llvm::DenseMap<Operation *, uint64_t> scores; // attention scratch
  llvm::DenseMap<Operation *, uint64_t> qacts;  // int8 activations of packed (r16/r32) linears
  // KV cache of one layer: K plane, int8 K scales (f32 per token and KV head), V plane,
  // each 64-byte aligned.
  struct KvSlots {
    uint64_t k = 0, kScales = 0, v = 0;
  };
  std::map<int32_t, KvSlots> kvOffsets; // by layer
  const std::string &ropeTable(float theta, int32_t rotaryDims);
  std::map<std::pair<float, int32_t>, std::string> ropeTableNames;
  std::map<std::string, LLVM::LLVMFuncOp> kernels;
  Value weightsBase, scratchBase, kvBase, ctxArg, tokensArg, positionsArg, nArg, logitsArg;
  Value lastLogitsOnly; // kiln_exec_ctx_t.last_logits_only
  llvm::DenseMap<Operation *, std::string> headMaps; // constant query-head -> KV-head maps
};

// The name of the cos/sin tables of (theta, rotary dims), made on first use.
const std::string &Lowering::ropeTable(float theta, int32_t rotaryDims) {
  auto key = std::make_pair(theta, rotaryDims);
  auto it = ropeTableNames.find(key);
  if (it != ropeTableNames.end())
    return it->second;
  std::string name = "rope." + std::to_string(ropeTableNames.size());
  std::vector<float> c, s;
  ropeTables(theta, rotaryDims, opts.maxCtx, c, s);
  out.weights.addF32(name + ".cos", {uint64_t(rotaryDims / 2), opts.maxCtx}, c);
  out.weights.addF32(name + ".sin", {uint64_t(rotaryDims / 2), opts.maxCtx}, s);
  return ropeTableNames[key] = name;
}

// Emits body(t0, count) once per kiln.token_panel tokens of the call's n (passes/layout
// kiln-size-prefill-panels), or once with (null, n) for an op without panels.
void Lowering::forTokenPanels(Operation *op,
                              llvm::function_ref<void(Value t0, Value count)> body) {
  auto panelAttr = op->getAttrOfType<IntegerAttr>("kiln.token_panel");
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

// Sizes the weights section before plan fills it, so it never reallocates: growing by
// doubling copied every weight so far each time (a Llama-2-7B q4_0 compile: 6.23 GB of
// anonymous memory at its peak for 3.79 GB of weights). The matrices' sizes come from
// their ops' shapes (fused weights do not exist until plan builds them); the rest (norms,
// biases, RoPE tables) from the store or a margin. Over-counting (a weight two ops read) costs
// address space only: the pages are touched as weights are written.
void Lowering::reserveWeights(ArrayRef<Operation *> ops) {
  uint64_t bytes = 1 << 20; // RoPE tables, biases, derived norms
  auto add = [&](uint64_t n) { bytes += n + 128; }; // + the alignment before it
  for (Operation *op : ops) {
    auto fromStore = [&](StringRef name, uint32_t format) {
      if (const WeightView *w = store.find(name.str()))
        add(WeightLayout::storedBytes(format, RowLayout::Block, w->numRows(), w->rowLength()));
    };
    if (auto e = dyn_cast<EmbedOp>(op)) {
      fromStore(e.getWeight(), formatOf(op));
    } else if (auto n = dyn_cast<RmsNormOp>(op)) {
      fromStore(n.getWeight(), normFormatOf(n));
    } else if (isa<LinearOp, LogitsOp>(op)) {
      add(WeightLayout::storedBytes(formatOf(op), weightLayoutOf(op),
                                    uint64_t(features(op->getResult(0))),
                                    uint64_t(features(op->getOperand(0))), rowAlignOf(op)));
      if (auto bias = op->getAttrOfType<StringAttr>("bias"))
        fromStore(bias.getValue(), KILN_GGML_TYPE_F32);
    } else if (auto f = dyn_cast<FusedLinearOp>(op)) {
      add(WeightLayout::storedBytes(formatOf(op), weightLayoutOf(op), uint64_t(fusedRows(f)),
                                    uint64_t(features(f.getInput())), rowAlignOf(op)));
    }
  }
  out.weights.reserveBytes(bytes);
}

bool Lowering::plan(func::FuncOp fn, std::string &error) {
  std::vector<Operation *> ops;
  for (Operation &op : fn.getBody().front())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, int64_t> index;
  for (size_t i = 0; i < ops.size(); ++i)
    index[ops[i]] = int64_t(i);

  std::vector<BufferRequest> requests;
  std::vector<Value> owners;           // value or null (attention scores)
  std::vector<Operation *> scoreOwners;
  llvm::DenseMap<Value, Value> aliasOf; // rope results and in-place residual sums
  auto lastUse = [&](Value v) {
    int64_t last = index[v.getDefiningOp()];
    for (Operation *user : v.getUsers())
      last = std::max(last, index[user]);
    return last;
  };
  const uint64_t rowsBytes = uint64_t(opts.maxBatch) * 4;
  reserveWeights(ops);

  for (size_t i = 0; i < ops.size(); ++i) {
    Operation *op = ops[i];
    if (auto e = dyn_cast<EmbedOp>(op)) {
      if (!addWeight(e.getWeight().str(), formatOf(op), error))
        return false;
    } else if (auto n = dyn_cast<RmsNormOp>(op)) {
      if (!addWeight(n.getWeight().str(), normFormatOf(n), error))
        return false;
    } else if (isa<LinearOp, LogitsOp>(op)) {
      const std::string wname = op->getAttrOfType<StringAttr>("weight").str();
      if (!addWeight(wname, formatOf(op), error, weightLayoutOf(op), rowAlignOf(op)))
        return false;
      if (kiln_is_packed(out.weights.find(wname)->format)) {
        // scratch for x quantised to int8, live during the op only
        requests.push_back({uint64_t(opts.maxBatch) *
                                kiln_packed_act_stride(uint64_t(features(op->getOperand(0)))),
                            int64_t(i), int64_t(i)});
        owners.push_back(Value());
        scoreOwners.push_back(op);
      }
      if (auto bias = op->getAttrOfType<StringAttr>("bias")) {
        if (!addWeight(bias.str(), KILN_GGML_TYPE_F32, error))
          return false;
        const std::vector<uint64_t> &bdims = out.weights.find(bias.str())->shape;
        if (bdims.size() != 1 || int64_t(bdims[0]) != features(op->getResult(0))) {
          error = "kiln.linear bias '" + bias.str() + "' must be a 1-D [" +
                  std::to_string(features(op->getResult(0))) + "] f32 vector";
          return false;
        }
      }
    } else if (auto f = dyn_cast<FusedLinearOp>(op)) {
      if (!addWeight(f.getWeight().str(), formatOf(op), error, weightLayoutOf(op),
                     rowAlignOf(op)))
        return false;
      if (kiln_is_packed(out.weights.find(f.getWeight().str())->format)) {
        requests.push_back({uint64_t(opts.maxBatch) *
                                kiln_packed_act_stride(uint64_t(features(f.getInput()))),
                            int64_t(i), int64_t(i)});
        owners.push_back(Value());
        scoreOwners.push_back(op);
      }
      const int64_t rows = fusedRows(f);
      const PackedTensor *t = out.weights.find(f.getWeight().str());
      if (int64_t(t->rows) != rows || int64_t(t->rowLength) != features(f.getInput())) {
        error = "kiln.fused_linear weight '" + f.getWeight().str() + "' is not [" +
                std::to_string(rows) + ", " + std::to_string(features(f.getInput())) + "]";
        return false;
      }
      // The residual's buffer becomes the output when this op is its last reader.
      Value res = f.getResidual();
      if (res && res.getDefiningOp() && lastUse(res) == int64_t(i)) {
        aliasOf[f.getResult(0)] = aliasOf.count(res) ? aliasOf.lookup(res) : res;
        continue;
      }
      for (Value result : f.getResults()) {
        requests.push_back({rowsBytes * uint64_t(features(result)), int64_t(i), lastUse(result)});
        owners.push_back(result);
        scoreOwners.push_back(nullptr);
      }
      continue;
    } else if (auto r = dyn_cast<RopeOp>(op)) {
      if (!r.getInput().hasOneUse()) {
        error = "kiln.rope rotates in place, so its input must have no other use";
        return false;
      }
      aliasOf[r.getResult()] = r.getInput();
      ropeTable(r.getTheta().convertToFloat(), int32_t(r.getRotaryDims()));
      continue;
    } else if (auto a = dyn_cast<AttentionOp>(op)) {
      if (a.getHeadDim() > KILN_UK_ATTENTION_MAX_HEAD_DIM) {
        error = "kiln.attention head_dim " + std::to_string(a.getHeadDim()) +
                " exceeds the CPU kernels' " + std::to_string(KILN_UK_ATTENTION_MAX_HEAD_DIM);
        return false;
      }
      if (a.getRopeRotaryDimsAttr())
        ropeTable(a.getRopeThetaAttr().getValue().convertToFloat(),
                  int32_t(*a.getRopeRotaryDims()));
      const uint64_t kvHeads = a.getNumKvHeads(), headDim = a.getHeadDim();
      const uint64_t rows = uint64_t(opts.maxCtx) * kvHeads * headDim;
      auto elemBytes = [](KvElem e) { return e == KvElem::F32 ? 4u : e == KvElem::F16 ? 2u : 1u; };
      auto align64 = [](uint64_t x) { return (x + 63) & ~uint64_t(63); };
      KvSlots &slots = kvOffsets[int32_t(a.getLayer())];
      slots.k = out.kvBytes;
      out.kvBytes = align64(out.kvBytes + rows * elemBytes(opts.kv.k));
      if (opts.kv.k == KvElem::I8) {
        slots.kScales = out.kvBytes;
        out.kvBytes = align64(out.kvBytes + uint64_t(opts.maxCtx) * kvHeads * 4);
      }
      slots.v = out.kvBytes;
      out.kvBytes = align64(out.kvBytes + rows * elemBytes(opts.kv.v));
      out.kvBytesPerToken += kvBytesPerTokenLayer(opts.kv, kvHeads, headDim);
      requests.push_back({uint64_t(a.getNumHeads()) * opts.maxCtx * 4, int64_t(i), int64_t(i)});
      owners.push_back(Value());
      scoreOwners.push_back(op);
    } else if (isa<func::ReturnOp>(op)) {
      continue;
    } else if (!isa<SiluOp, MulOp, AddOp, RmsNormalizeOp>(op)) {
      error = "the CPU code generator does not lower '" + op->getName().getStringRef().str() + "'";
      return false;
    }
    if (isa<LogitsOp>(op)) {
      Value l = op->getResult(0);
      if (!l.hasOneUse() || !isa<func::ReturnOp>(*l.getUsers().begin())) {
        error = "kiln.logits must be @forward's returned value (it is written to the "
                "caller's logits buffer)";
        return false;
      }
      out.vocab = uint32_t(features(l));
      continue;
    }
    Value result = op->getResult(0);
    requests.push_back({rowsBytes * uint64_t(features(result)), int64_t(i), lastUse(result)});
    owners.push_back(result);
    scoreOwners.push_back(nullptr);
  }
  // A rope result extends its input buffer's life to the result's last use.
  for (auto &[result, input] : aliasOf)
    for (size_t r = 0; r < owners.size(); ++r)
      if (owners[r] == input)
        requests[r].lastUse = std::max(requests[r].lastUse, lastUse(result));

  ScratchPlan sp = planScratch(requests);
  for (size_t r = 0; r < owners.size(); ++r) {
    if (owners[r])
      offsets[owners[r]] = sp.offsets[r];
    else if (isa<AttentionOp>(scoreOwners[r]))
      scores[scoreOwners[r]] = sp.offsets[r];
    else
      qacts[scoreOwners[r]] = sp.offsets[r];
  }
  for (auto &[result, input] : aliasOf)
    offsets[result] = offsets.lookup(input);
  out.scratchBytes = sp.totalBytes;
  out.scratchBytesWithoutReuse = sp.naiveBytes;
  return true;
}

LLVM::LLVMFuncOp Lowering::declare(StringRef name, Type result, ArrayRef<Type> args) {
  auto f = b.create<LLVM::LLVMFuncOp>(loc, name, LLVM::LLVMFunctionType::get(result, args));
  kernels[name.str()] = f;
  return f;
}

void Lowering::emit(func::FuncOp fn) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type(), f32 = b.getF32Type();
  Type voidTy = LLVM::LLVMVoidType::get(ctx);
  b.setInsertionPointToEnd(out.module->getBody());
  declare("kiln_uk_check_inputs", i32, {ptrTy, ptrTy, i32, i32, i32, i32});
  declare("kiln_uk_embed", voidTy, {ptrTy, i32, ptrTy, i64, i32, ptrTy, i32, ptrTy});
  declare("kiln_uk_rms_norm", voidTy, {i32, ptrTy, ptrTy, i32, i32, f32, ptrTy});
  declare("kiln_uk_linear", voidTy, {ptrTy, i32, ptrTy, i32, i32, ptrTy, i64, i32, ptrTy});
  declare("kiln_uk_linear_fused", voidTy,
          {ptrTy, i32, ptrTy, i32, i32, ptrTy, i64, i32, ptrTy, i32, ptrTy, i32, ptrTy, i32,
           ptrTy, i32});
  declare("kiln_uk_linear_packed_fused", voidTy,
          {ptrTy, i32, ptrTy, i32, i32, ptrTy, i64, i32, ptrTy, i32, ptrTy, i32, ptrTy, i32,
           ptrTy, i32, ptrTy, i32});
  declare("kiln_uk_linear_packed", voidTy,
          {ptrTy, i32, ptrTy, i32, i32, ptrTy, i64, i32, ptrTy, ptrTy, i32});
  declare("kiln_uk_rope", voidTy, {ptrTy, i32, i32, i32, i32, i32, ptrTy, ptrTy, ptrTy});
  declare("kiln_uk_attention", voidTy,
          {ptrTy, ptrTy, ptrTy, ptrTy, i32, ptrTy, i32, i32, i32, f32, ptrTy, i32, i32, ptrTy,
           ptrTy, ptrTy, i32, i32, i32, ptrTy, ptrTy, ptrTy, ptrTy});
  declare("kiln_uk_silu", voidTy, {ptrTy, i64, ptrTy});
  declare("kiln_uk_mul", voidTy, {ptrTy, ptrTy, i64, ptrTy});
  declare("kiln_uk_add", voidTy, {ptrTy, ptrTy, i64, ptrTy});
  declare("kiln_uk_add_bias", voidTy, {ptrTy, ptrTy, i32, i32});

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
  ctxArg = body->getArgument(0);
  tokensArg = body->getArgument(1);
  positionsArg = body->getArgument(2);
  nArg = body->getArgument(3);
  logitsArg = body->getArgument(4);
  Block *fail = entry.addBlock(), *run = entry.addBlock();

  // Inputs are checked once, up front; the kernels trust them.
  b.setInsertionPointToStart(body);
  Value check = b.create<LLVM::CallOp>(loc, kernels["kiln_uk_check_inputs"],
                                       ValueRange{tokensArg, positionsArg, nArg,
                                                  i32c(out.vocab), i32c(opts.maxCtx),
                                                  i32c(opts.maxBatch)})
                    .getResult();
  Value bad = b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::ne, check, i32c(0));
  b.create<LLVM::CondBrOp>(loc, bad, fail, run);
  b.setInsertionPointToStart(fail);
  b.create<LLVM::ReturnOp>(loc, i32c(-1));

  b.setInsertionPointToStart(run);
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
  lastLogitsOnly = b.create<LLVM::LoadOp>(
      loc, i32, b.create<LLVM::GEPOp>(loc, ptrTy, ctxTy, ctxArg, ArrayRef<LLVM::GEPArg>{0, 7}));

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
}

void Lowering::emitOp(Operation *op, Value row) {
  Value rows = row ? i32c(1) : nArg; // rows of a panel-less op
  // v's rows from `row` on (all of v without one)
  auto from = [&](Value v) { return rowsAt(bufferPtr(v), row, features(v)); };
  if (auto e = dyn_cast<EmbedOp>(op)) {
    const PackedTensor *t = out.weights.find(e.getWeight().str());
    call("kiln_uk_embed", {ctxArg, i32c(t->format), weightPtr(e.getWeight()),
                           i64c(int64_t(t->rowStride)), i32c(features(e)), tokensArg, nArg,
                           bufferPtr(e)});
  } else if (auto n = dyn_cast<RmsNormOp>(op)) {
    const PackedTensor *t = out.weights.find(n.getWeight().str());
    call("kiln_uk_rms_norm", {i32c(t->format), from(n.getInput()), weightPtr(n.getWeight()),
                              rows, i32c(features(n)), f32c(n.getEps().convertToFloat()),
                              from(n)});
  } else if (auto n = dyn_cast<RmsNormalizeOp>(op)) {
    call("kiln_uk_rms_norm", {i32c(KILN_GGML_TYPE_F32), from(n.getInput()),
                              b.create<LLVM::ZeroOp>(loc, ptrTy), rows, i32c(features(n)),
                              f32c(n.getEps().convertToFloat()), from(n)});
  } else if (auto f = dyn_cast<FusedLinearOp>(op)) {
    const PackedTensor *t = out.weights.find(f.getWeight().str());
    forRows(op, row, [&](Value t0, Value count) {
      Value null = b.create<LLVM::ZeroOp>(loc, ptrTy);
      SmallVector<Value, 6> segs; // (y, width) per segment, unused ones (NULL, 0)
      for (unsigned k = 0; k < 3; ++k) {
        const bool used = k < f.getNumResults();
        segs.push_back(used ? rowsAt(bufferPtr(f.getResult(k)), t0, features(f.getResult(k)))
                            : null);
        segs.push_back(i32c(used ? features(f.getResult(k)) : 0));
      }
      // the residual has the first segment's rows
      Value residual = f.getResidual()
                           ? rowsAt(bufferPtr(f.getResidual()), t0, features(f.getResult(0)))
                           : null;
      SmallVector<Value, 18> args = {
          ctxArg, i32c(t->format), rowsAt(bufferPtr(f.getInput()), t0, features(f.getInput())),
          count, i32c(features(f.getInput())), weightPtr(f.getWeight()),
          i64c(int64_t(t->rowStride)), i32c(int32_t(t->rows)), segs[0], segs[1], segs[2],
          segs[3], segs[4], segs[5], residual, i32c(f.getSwiglu() ? 1 : 0)};
      if (kiln_is_packed(t->format)) {
        args.push_back(offsetPtr(scratchBase, qacts.lookup(op)));
        args.push_back(shardGroups(op));
        call("kiln_uk_linear_packed_fused", args);
      } else {
        call("kiln_uk_linear_fused", args);
      }
    });
  } else if (isa<LinearOp, LogitsOp>(op)) {
    Value input = op->getOperand(0), result = op->getResult(0);
    std::string name = op->getAttrOfType<StringAttr>("weight").str();
    const PackedTensor *t = out.weights.find(name);
    auto dstOf = [&] { return isa<LogitsOp>(op) ? logitsArg : bufferPtr(result); };
    auto panel = [&](Value t0, Value count) {
      Value x = rowsAt(bufferPtr(input), t0, features(input));
      Value y = rowsAt(dstOf(), t0, features(result));
      if (kiln_is_packed(t->format))
        call("kiln_uk_linear_packed",
             {ctxArg, i32c(t->format), x, count, i32c(features(input)), weightPtr(name),
              i64c(int64_t(t->rowStride)), i32c(features(result)), y,
              offsetPtr(scratchBase, qacts.lookup(op)), shardGroups(op)});
      else
        call("kiln_uk_linear", {ctxArg, i32c(t->format), x, count, i32c(features(input)),
                                weightPtr(name), i64c(int64_t(t->rowStride)),
                                i32c(features(result)), y});
      if (auto bias = op->getAttrOfType<StringAttr>("bias"))
        call("kiln_uk_add_bias",
             {y, weightPtr(bias.getValue()), count, i32c(features(result))});
    };
    forRows(op, row, panel);
  } else if (auto r = dyn_cast<RopeOp>(op)) {
    const std::string &table =
        ropeTable(r.getTheta().convertToFloat(), int32_t(r.getRotaryDims()));
    call("kiln_uk_rope", {bufferPtr(r), nArg, i32c(features(r)), i32c(r.getHeadDim()),
                          i32c(r.getRotaryDims()),
                          i32c(r.getStyle() == RopeStyle::rotate_half ? 1 : 0), positionsArg,
                          weightPtr(table + ".cos"), weightPtr(table + ".sin")});
  } else if (auto a = dyn_cast<AttentionOp>(op)) {
    const KvSlots &slots = kvOffsets[int32_t(a.getLayer())];
    auto null = [&] { return b.create<LLVM::ZeroOp>(loc, ptrTy).getResult(); };
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
          ropeTable(a.getRopeThetaAttr().getValue().convertToFloat(), rotDims);
      cosT = weightPtr(table + ".cos");
      sinT = weightPtr(table + ".sin");
    }
    call("kiln_uk_attention",
         {ctxArg, bufferPtr(a.getQ()), bufferPtr(a.getK()), bufferPtr(a.getV()), nArg,
          positionsArg, i32c(a.getNumHeads()), i32c(a.getNumKvHeads()), i32c(a.getHeadDim()),
          f32c(a.getScale().convertToFloat()), map, i32c(int64_t(opts.kv.k)),
          i32c(int64_t(opts.kv.v)), offsetPtr(kvBase, slots.k),
          opts.kv.k == KvElem::I8 ? offsetPtr(kvBase, slots.kScales) : null(),
          offsetPtr(kvBase, slots.v), i32c(opts.maxCtx), i32c(rotDims), i32c(rotHalf), cosT,
          sinT, offsetPtr(scratchBase, scores.lookup(op)), bufferPtr(a)});
  } else if (auto s = dyn_cast<SiluOp>(op)) {
    call("kiln_uk_silu", {from(s.getInput()), count(rows, features(s)), from(s)});
  } else if (isa<MulOp, AddOp>(op)) {
    call(isa<MulOp>(op) ? "kiln_uk_mul" : "kiln_uk_add",
         {from(op->getOperand(0)), from(op->getOperand(1)),
          count(rows, features(op->getResult(0))), from(op->getResult(0))});
  }
}

bool Lowering::run(std::string &error) {
  auto fn = src.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.getNumArguments() != 2 || fn.getNumResults() != 1) {
    error = "the module has no @forward(tokens, positions) -> logits";
    return false;
  }
  if (opts.maxCtx == 0 || opts.maxBatch == 0 || opts.maxBatch > opts.maxCtx) {
    error = "max context and max batch must be positive, batch <= context";
    return false;
  }
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ptrTy = LLVM::LLVMPointerType::get(ctx);
  out.module = ModuleOp::create(loc);
  if (!plan(fn, error))
    return false;
  emit(fn);
  // Bytes read per decoded token: every matrix once, one embedding row, the norms.
  fn.walk([&](Operation *op) {
    if (auto e = dyn_cast<EmbedOp>(op))
      out.weightBytesPerToken += out.weights.find(e.getWeight().str())->rowStride;
    else if (auto n = dyn_cast<RmsNormOp>(op))
      out.weightBytesPerToken += out.weights.find(n.getWeight().str())->size;
    else if (isa<LinearOp, LogitsOp, FusedLinearOp>(op)) {
      out.weightBytesPerToken +=
          out.weights.find(op->getAttrOfType<StringAttr>("weight").str())->size;
      if (auto bias = op->getAttrOfType<StringAttr>("bias"))
        out.weightBytesPerToken += out.weights.find(bias.str())->size;
    }
  });
  if (failed(out.module->verify())) {
    error = "internal error: the lowered module does not verify";
    return false;
  }
  return true;
}

} // namespace

bool lowerToUkernels(ModuleOp kilnModule, const WeightStore &store, const LoweringOptions &opts,
                     LoweredModel &out, std::string &error) {
  return Lowering(kilnModule, store, opts, out).run(error);
}

} // namespace kiln::codegen
