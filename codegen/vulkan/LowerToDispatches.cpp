//===- LowerToDispatches.cpp - kiln ops to Vulkan dispatches ---------------===//
//
// One small lowering per op, each appending the dispatches of codegen/vulkan/kernels that
// compute it (docs/vulkan.md has each kernel's bindings and push constants). Activations
// keep the memory plan's scratch offsets, the KV cache its planes, so the GPU buffers are
// laid out as the CPU's. Attention with fused RoPE rotates q and k in place first (their
// only reader is the attention), stores the batch's K/V rows, then attends.
//===----------------------------------------------------------------------===//
#include "codegen/vulkan/LowerToDispatches.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include "codegen/vulkan/GpuProgram.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "kiln/gpu_program.h"
#include "kiln/quant.h"
#include "passes/memory/MemoryPlan.h"

using namespace mlir;

namespace kiln::codegen::vulkan {
namespace {

constexpr uint32_t kWorkgroup = 64; // threads per workgroup, every kernel
constexpr uint32_t kLinearRows = 2;   // rows per workgroup of `linear`
constexpr uint32_t kMatmulTokens = 8; // tokens per thread of `matmul` (prefill)

PushWord c(uint32_t b) { return PushWord{0, b}; }
PushWord perToken(uint32_t a, uint32_t b = 0) { return PushWord{int32_t(a), b}; }
PushWord bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return c(u);
}
PushWord weightOffset(StringRef name, uint32_t format, uint32_t divide = 1) {
  PushWord p;
  p.ref = PushWord::Ref::Offset;
  p.weight = name.str();
  p.format = format;
  p.divide = divide;
  return p;
}
PushWord weightStride(StringRef name, uint32_t format) {
  PushWord p = weightOffset(name, format);
  p.ref = PushWord::Ref::Stride;
  return p;
}
Groups fixed(uint32_t count) { return Groups{0, count, 1}; }
Groups tokens() { return Groups{1, 0, 1}; }
Groups perTokenOver(uint32_t perToken, uint32_t div) { return Groups{perToken, 0, div}; }
uint32_t ceilDiv(uint64_t a, uint32_t b) { return uint32_t((a + b - 1) / b); }

uint32_t width(Value v) { return uint32_t(cast<RankedTensorType>(v.getType()).getDimSize(1)); }

bool gpuFormat(uint32_t f) {
  return f == KILN_GGML_TYPE_F32 || f == KILN_GGML_TYPE_F16 || f == KILN_GGML_TYPE_Q8_0 ||
         f == KILN_GGML_TYPE_Q4_0 || f == KILN_GGML_TYPE_Q4_1 || f == KILN_GGML_TYPE_Q4_K ||
         f == KILN_GGML_TYPE_Q5_K || f == KILN_GGML_TYPE_Q6_K;
}

class DispatchLowering {
public:
  DispatchLowering(const memory::MemoryPlan &plan, GpuProgram &program,
                   uint64_t maxBindingBytes, uint64_t rowAlign)
      : plan(plan), program(program), maxBindingBytes(maxBindingBytes),
        rowAlign(rowAlign ? rowAlign : 1) {}

  LogicalResult run(func::FuncOp fn) {
    nameRopeTables(fn);
    for (Operation &op : fn.getBody().front()) {
      ++opIndex;
      if (!isa<func::ReturnOp, LogitsOp>(op) && !op.hasAttr(attr::kBuffers))
        return op.emitOpError("has no memory plan (run kiln-plan-memory first)");
      LogicalResult r =
          llvm::TypeSwitch<Operation *, LogicalResult>(&op)
              .Case<EmbedOp>([&](auto e) { return lowerEmbed(e); })
              .Case<RmsNormOp, RmsNormalizeOp>([&](auto) { return lowerRmsNorm(&op); })
              .Case<LinearOp, LogitsOp>([&](auto) { return lowerLinear(&op); })
              .Case<RopeOp>([&](auto r) { return lowerRope(r); })
              .Case<AttentionOp>([&](auto a) { return lowerAttention(a); })
              .Case<SiluOp, MulOp, AddOp>([&](auto) { return lowerEltwise(&op); })
              .Case<func::ReturnOp>([&](auto) { return success(); })
              .Default([&](Operation *o) {
                return cpuOnly(o, "no Vulkan lowering for " +
                                      o->getName().getStringRef().str() + " yet");
              });
      if (failed(r))
        return failure();
    }
    return success();
  }

private:
  // The scratch offset of v's buffer, in floats.
  uint32_t at(Value v) {
    auto result = cast<OpResult>(v);
    auto buffers = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(attr::kBuffers);
    return uint32_t(buffers[result.getResultNumber()] / 4);
  }
  // The op stays on the CPU: the artifact's per-op entry computes it wherever the program
  // runs (docs/vulkan.md, "Placement"), and kiln compile says which ops and why.
  LogicalResult cpuOnly(Operation *op, const std::string &why) {
    Dispatch d;
    d.cpuReason = why;
    add(std::move(d), op);
    return success();
  }
  static std::string formatReason(uint32_t format) {
    return "weights of format " + std::to_string(format) +
           " (the Vulkan kernels read f32, f16, q8_0, q4_0, q4_1, q4_K, q5_K and q6_K)";
  }
  void add(Dispatch d, Operation *op) {
    std::string loc;
    llvm::raw_string_ostream os(loc);
    os << op->getName().getStringRef();
    if (auto layer = op->getAttrOfType<IntegerAttr>("kiln.layer"))
      os << " layer " << layer.getInt();
    d.what = os.str();
    d.op = opIndex;
    program.dispatches.push_back(std::move(d));
  }

  // The CPU lowering names RoPE tables "rope.N" in the order their ops first ask for them
  // (LowerToUkernels.cpp, storeWeights); the same walk gives the same names.
  void nameRopeTables(func::FuncOp fn) {
    auto note = [&](float theta, int64_t dims, Attribute factors) {
      auto key = std::make_tuple(theta, dims, factors ? factors.getAsOpaquePointer() : nullptr);
      if (!ropeNames.count(key))
        ropeNames[key] = "rope." + std::to_string(ropeNames.size());
    };
    for (Operation &op : fn.getBody().front()) {
      if (auto r = dyn_cast<RopeOp>(op))
        note(r.getTheta().convertToFloat(), r.getRotaryDims(), r.getFreqFactorsAttr());
      if (auto a = dyn_cast<AttentionOp>(op); a && a.getRopeRotaryDimsAttr())
        note(a.getRopeThetaAttr().getValue().convertToFloat(), *a.getRopeRotaryDims(),
             a.getRopeFreqFactorsAttr());
    }
  }
  const std::string &ropeTable(float theta, int64_t dims, Attribute factors) {
    return ropeNames[std::make_tuple(theta, dims,
                                     factors ? factors.getAsOpaquePointer() : nullptr)];
  }

  LogicalResult lowerEmbed(EmbedOp e) {
    const WeightRead w = weightReadsOf(e).front();
    if (!gpuFormat(w.format))
      return cpuOnly(e, formatReason(w.format));
    const uint32_t dim = width(e.getResult());
    Dispatch d{"embed", {kWorkgroup, w.format}, {KILN_GPU_BUF_WEIGHTS, KILN_GPU_BUF_TOKENS,
                                                KILN_GPU_BUF_SCRATCH}};
    d.push = {c(dim), perToken(1), weightStride(w.name, w.format), weightOffset(w.name, w.format),
              c(0), c(at(e.getResult()))};
    d.groups[0] = fixed(ceilDiv(dim, kWorkgroup));
    d.groups[1] = tokens();
    d.groups[2] = fixed(1);
    add(std::move(d), e);
    return success();
  }

  LogicalResult lowerRmsNorm(Operation *op) {
    auto weights = weightReadsOf(op);
    const bool hasWeight = !weights.empty();
    const uint32_t format = hasWeight ? weights.front().format : KILN_GGML_TYPE_F32;
    if (format != KILN_GGML_TYPE_F32 && format != KILN_GGML_TYPE_F16)
      return cpuOnly(op, "a norm scale of format " + std::to_string(format) +
                             " (the Vulkan kernels: f32 or f16)");
    const float eps = op->getAttrOfType<FloatAttr>("eps").getValueAsDouble();
    Dispatch d{"rms_norm", {kWorkgroup, format},
               {KILN_GPU_BUF_WEIGHTS, KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_SCRATCH}};
    d.push = {c(width(op->getResult(0))),
              hasWeight ? weightOffset(weights.front().name, format) : c(0),
              c(at(op->getOperand(0))), c(at(op->getResult(0))), bits(eps), c(hasWeight)};
    d.groups[0] = tokens();
    d.groups[1] = d.groups[2] = fixed(1);
    add(std::move(d), op);
    return success();
  }

  LogicalResult lowerLinear(Operation *op) {
    const WeightRead w = weightReadsOf(op).front();
    if (op->getAttr("bias"))
      return cpuOnly(op, "a bias, which the Vulkan lowering does not add yet");
    if (readsRowGroups(op))
      return op->emitOpError("reads packed row groups; a Vulkan target lays rows out plain");
    if (!gpuFormat(w.format))
      return cpuOnly(op, formatReason(w.format));
    const bool logits = isa<LogitsOp>(op);
    const uint32_t in = width(op->getOperand(0)), out = width(op->getResult(0));
    // Rows per dispatch: all of them, or as many whole workgroups of rows as fit one
    // binding (maxStorageBufferRange; docs/vulkan.md, "Weights larger than a binding"), the
    // row stride bounded by its row's bytes rounded up to the row alignment.
    // (a row is padded to whole blocks: stories260K's ffn_down rows are 172 elements)
    const uint64_t blockElems = kiln_ggml_block_elems(w.format);
    const uint64_t rowBytes =
        (in + blockElems - 1) / blockElems * kiln_ggml_block_bytes(w.format);
    const uint64_t strideBound = (rowBytes + rowAlign - 1) / rowAlign * rowAlign;
    const uint32_t chunk = uint32_t(std::min<uint64_t>(
        out, std::max<uint64_t>(kWorkgroup, maxBindingBytes / strideBound / kWorkgroup *
                                                kWorkgroup)));
    for (uint32_t r0 = 0; r0 < out; r0 += chunk) {
      const uint32_t rows = std::min(chunk, out - r0);
      PushWord from = weightOffset(w.name, w.format);
      from.rows = r0;
      from.windowRows = rows < out ? rows : 0;
      // A decode step reduces each row across a workgroup (linear.comp); a prefill batch
      // gives each thread one row for kMatmulTokens tokens (matmul.comp). Both write
      // columns r0.. of each token's row of y.
      Dispatch d{"linear", {kWorkgroup, w.format, kLinearRows, 1},
                 {KILN_GPU_BUF_WEIGHTS, KILN_GPU_BUF_SCRATCH,
                  logits ? uint32_t(KILN_GPU_BUF_LOGITS) : uint32_t(KILN_GPU_BUF_SCRATCH),
                  KILN_GPU_BUF_SCRATCH}};
      d.push = {c(in),  c(rows), weightStride(w.name, w.format), from,
                c(at(op->getOperand(0))), c((logits ? 0 : at(op->getResult(0))) + r0),
                c(0),   c(0),    perToken(1), c(out)};
      d.when = KILN_GPU_WHEN_DECODE;
      d.groups[0] = fixed(ceilDiv(rows, kLinearRows));
      d.groups[1] = d.groups[2] = fixed(1);
      Dispatch m = d;
      m.kernel = "matmul";
      m.when = KILN_GPU_WHEN_PREFILL;
      m.constants = {kWorkgroup, w.format, kLinearRows, kMatmulTokens};
      m.groups[0] = fixed(ceilDiv(rows, kWorkgroup));
      m.groups[1] = Groups{1, 0, kMatmulTokens};
      add(std::move(d), op);
      add(std::move(m), op);
    }
    return success();
  }

  // In-place rotation of the [n, width] activation at float offset x.
  void rope(Operation *op, uint32_t x, uint32_t widthElems, uint32_t headDim, uint32_t dims,
            bool rotateHalf, const std::string &table) {
    Dispatch d{"rope", {kWorkgroup},
               {KILN_GPU_BUF_WEIGHTS, KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_POSITIONS}};
    d.push = {perToken(1), c(widthElems), c(headDim), c(dims), c(rotateHalf), c(x),
              weightOffset(table + ".cos", KILN_GGML_TYPE_F32, 4),
              weightOffset(table + ".sin", KILN_GGML_TYPE_F32, 4), c(0)};
    d.groups[0] = fixed(ceilDiv(uint64_t(dims / 2) * (widthElems / headDim), kWorkgroup));
    d.groups[1] = tokens();
    d.groups[2] = fixed(1);
    add(std::move(d), op);
  }

  LogicalResult lowerRope(RopeOp r) {
    if (at(r.getInput()) != at(r.getResult()))
      return cpuOnly(r, "it does not rotate in place (the memory plan gave its result another "
                        "buffer)");
    rope(r, at(r.getResult()), width(r.getResult()), r.getHeadDim(), r.getRotaryDims(),
         r.getStyle() == RopeStyle::rotate_half,
         ropeTable(r.getTheta().convertToFloat(), r.getRotaryDims(), r.getFreqFactorsAttr()));
    return success();
  }

  LogicalResult lowerAttention(AttentionOp a) {
    const uint32_t heads = a.getNumHeads(), kvHeads = a.getNumKvHeads(), d = a.getHeadDim();
    if (a.getKvHeadMap())
      return cpuOnly(a, "query heads mapped to KV heads explicitly (pruned heads), which the "
                        "Vulkan attention does not take yet");
    if (plan.kv.k != KvElem::F32 && plan.kv.k != KvElem::F16)
      return cpuOnly(a, "K kept as int8; the Vulkan kernels store f32 or f16 (--kv)");
    if (kvHeads == 0 || heads % kvHeads != 0 || (kvHeads * d) % 2 != 0)
      return cpuOnly(a, std::to_string(heads) + " heads over " + std::to_string(kvHeads) +
                            " KV heads of " + std::to_string(d) +
                            " (the Vulkan kernels need an even KV row)");
    ArrayRef<int64_t> slots = a->getAttrOfType<DenseI64ArrayAttr>(attr::kKvSlots).asArrayRef();
    if (a.getRopeRotaryDimsAttr()) {
      for (Value v : {a.getQ(), a.getK()})
        if (!v.hasOneUse())
          return cpuOnly(a, "RoPE fused, and its q or k has another reader: the Vulkan "
                            "lowering rotates them in place");
      const std::string &table =
          ropeTable(a.getRopeThetaAttr().getValue().convertToFloat(), *a.getRopeRotaryDims(),
                    a.getRopeFreqFactorsAttr());
      const bool half = *a.getRopeStyle() == RopeStyle::rotate_half;
      const uint32_t dims = uint32_t(*a.getRopeRotaryDims());
      rope(a, at(a.getQ()), heads * d, d, dims, half, table);
      rope(a, at(a.getK()), kvHeads * d, d, dims, half, table);
    }
    const uint32_t kf = uint32_t(plan.kv.k), vf = uint32_t(plan.kv.v);
    Dispatch store{"kv_store", {kWorkgroup, kf, vf},
                   {KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_KV,
                    KILN_GPU_BUF_POSITIONS}};
    store.push = {perToken(1), c(kvHeads * d), c(at(a.getK())), c(at(a.getV())),
                  c(uint32_t(slots[0])), c(uint32_t(slots[2])), c(0)};
    store.groups[0] = fixed(ceilDiv(kvHeads * d / 2, kWorkgroup));
    store.groups[1] = tokens();
    store.groups[2] = fixed(1);
    add(std::move(store), a);
    Dispatch attend{"attention", {kWorkgroup, kf, vf},
                    {KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_KV, KILN_GPU_BUF_POSITIONS,
                     KILN_GPU_BUF_GPU_SCRATCH, KILN_GPU_BUF_SCRATCH}};
    attend.push = {c(heads), c(kvHeads), c(d), c(plan.maxCtx),
                   bits(a.getScale().convertToFloat()), c(at(a.getQ())), c(at(a.getResult())),
                   c(uint32_t(slots[0])), c(uint32_t(slots[2])), c(0), c(0)};
    attend.groups[0] = fixed(heads);
    attend.groups[1] = tokens();
    attend.groups[2] = fixed(1);
    add(std::move(attend), a);
    program.gpuScratchBytes = std::max<uint64_t>(
        program.gpuScratchBytes, uint64_t(plan.maxBatch) * heads * plan.maxCtx * 4);
    return success();
  }

  LogicalResult lowerEltwise(Operation *op) {
    const uint32_t kind = isa<AddOp>(op) ? 0 : isa<MulOp>(op) ? 1 : 2;
    const uint32_t w = width(op->getResult(0));
    Value a = op->getOperand(0), b = op->getNumOperands() > 1 ? op->getOperand(1) : a;
    Dispatch d{"eltwise", {kWorkgroup, kind},
               {KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_SCRATCH}};
    d.push = {perToken(w), c(at(a)), c(at(b)), c(at(op->getResult(0)))};
    d.groups[0] = perTokenOver(w, kWorkgroup);
    d.groups[1] = d.groups[2] = fixed(1);
    add(std::move(d), op);
    return success();
  }

  const memory::MemoryPlan &plan;
  GpuProgram &program;
  const uint64_t maxBindingBytes, rowAlign;
  uint32_t opIndex = uint32_t(-1); // the op being lowered: its place in @forward
  std::map<std::tuple<float, int64_t, const void *>, std::string> ropeNames;
};

struct LowerToVulkanDispatchesPass
    : PassWrapper<LowerToVulkanDispatchesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerToVulkanDispatchesPass)
  LowerToVulkanDispatchesPass() = default;
  LowerToVulkanDispatchesPass(const LowerToVulkanDispatchesPass &other)
      : PassWrapper(other), sink(other.sink) {}
  LowerToVulkanDispatchesPass(GpuProgram *sink, uint64_t maxBinding, uint64_t align)
      : sink(sink) {
    maxBindingBytes = maxBinding;
    rowAlign = align;
  }

  Option<uint64_t> maxBindingBytes{
      *this, "max-binding-bytes",
      llvm::cl::desc("weights one dispatch reads at most (a linear's rows are split over "
                     "dispatches past it): the smallest maxStorageBufferRange planned for"),
      llvm::cl::init(kMaxBindingBytes)};
  Option<uint64_t> rowAlign{*this, "row-align",
                            llvm::cl::desc("the CPU target's row alignment in bytes"),
                            llvm::cl::init(64)};

  StringRef getArgument() const final { return "kiln-lower-to-vulkan-dispatches"; }
  StringRef getDescription() const final {
    return "@forward as dispatches of the Vulkan kernels (kiln compile's GPU section)";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>("forward");
    if (!fn || fn.getBody().empty()) {
      module.emitError("the module has no @forward");
      return signalPassFailure();
    }
    FailureOr<memory::MemoryPlan> plan = memory::readMemoryPlan(module);
    if (failed(plan))
      return signalPassFailure();
    GpuProgram own;
    GpuProgram &program = sink ? *sink : own;
    program = GpuProgram();
    if (failed(DispatchLowering(*plan, program, maxBindingBytes, rowAlign).run(fn)))
      return signalPassFailure();
    // One remark naming the ops left to the CPU and why, most frequent reason first.
    std::map<std::string, std::vector<std::string>> cpu;
    for (const Dispatch &d : program.dispatches)
      if (d.kernel.empty())
        cpu[d.cpuReason].push_back(d.what);
    if (!cpu.empty()) {
      std::string text;
      size_t ops = 0;
      for (const auto &[why, whats] : cpu) {
        ops += whats.size();
        text += (text.empty() ? "" : "; ") + std::to_string(whats.size()) +
                (whats.size() > 1 ? " ops, the first " : " op, ") + whats.front() + ": " + why;
      }
      module.emitRemark() << ops << " ops compiled for the CPU only, run there by the "
                          << "per-op fallback wherever the program runs (" << text << ")";
    }
    if (!sink)
      llvm::outs() << describe(program);
  }

  GpuProgram *sink = nullptr;
};

} // namespace

std::unique_ptr<Pass> createLowerToVulkanDispatches(GpuProgram *program,
                                                   uint64_t maxBindingBytes,
                                                   uint64_t rowAlign) {
  return std::make_unique<LowerToVulkanDispatchesPass>(program, maxBindingBytes, rowAlign);
}

void registerKilnVulkanCodegenPasses() {
  PassRegistration<LowerToVulkanDispatchesPass>();
}

} // namespace kiln::codegen::vulkan
