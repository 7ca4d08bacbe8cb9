#include "compiler/eval/RefExecutor.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include "compiler/eval/OpKernels.h"
#include "models/weights/WeightStore.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {

namespace {

// Values of one forward call: fp32 activations by slot, plus the two i32 arguments.
struct Frame {
  std::vector<Matrix> act;
  const std::vector<int32_t> *tokens = nullptr;
  std::vector<int32_t> positions;
};

using Step = std::function<bool(Frame &, std::string &)>;

} // namespace

struct RefExecutor::Impl {
  uint32_t vocab = 0, maxCtx = 0; // vocab: features of @forward's result
  KvStorage kvStorage;
  // Decoded once per (name, storage format): what the compiled code reads.
  std::map<std::pair<std::string, uint32_t>, std::shared_ptr<Matrix>> weights;
  std::map<int32_t, KvCache> cache;                       // by attention layer
  std::vector<Step> steps;
  std::vector<ObservedOp> stepOps; // what the hooks are told, one per step
  std::vector<int> stepOut;        // result slot of each step
  ResultObserver resultObserver;
  AttentionObserver attentionObserver;
  InputObserver inputObserver;
  size_t numSlots = 0;
  int resultSlot = -1;

  const WeightStore *store = nullptr;
  llvm::DenseMap<Value, int> slots;
  enum class IntArg { Tokens, Positions };
  llvm::DenseMap<Value, IntArg> intArgs;

  // Decoded weight with the expected [rows, cols]; cols is the stored row length. The
  // values are those of the weight stored in `format` (ggml id); ~0u: its own format.
  std::shared_ptr<Matrix> weight(Operation *op, StringRef name, int64_t rows, int64_t cols,
                                 std::string &error, uint32_t format = ~0u);
  int slotOf(Value v) { return slots.lookup(v); }
  int newSlot(Value v) { return slots[v] = int(numSlots++); }
  bool compile(func::FuncOp fn, std::string &error);
  bool compileOp(Operation *op, std::string &error);
};

std::shared_ptr<Matrix> RefExecutor::Impl::weight(Operation *op, StringRef nameRef,
                                                  int64_t rows, int64_t cols,
                                                  std::string &error, uint32_t format) {
  std::string name = nameRef.str();
  const WeightView *w = store->find(name);
  std::string where = op->getName().getStringRef().str() + " weight '" + name + "'";
  if (!w) {
    error = where + " is not in the weight store";
    return nullptr;
  }
  bool vector = rows == 1 && w->dims.size() == 1;
  if (int64_t(w->rowLength()) != cols || int64_t(w->numRows()) != rows ||
      (!vector && w->dims.size() != 2)) {
    error = where + " has " + std::to_string(w->numRows()) + " rows of " +
            std::to_string(w->rowLength()) + " but the op needs " + std::to_string(rows) +
            " rows of " + std::to_string(cols);
    return nullptr;
  }
  if (format == ~0u)
    format = w->format;
  auto it = weights.find({name, format});
  if (it != weights.end())
    return it->second;
  std::vector<float> data;
  if (!store->dequantizeAs(name, format, data, error))
    return nullptr;
  auto m = std::make_shared<Matrix>(rows, cols);
  std::copy(data.begin(), data.end(), m->data());
  weights[{name, format}] = m;
  return m;
}

bool RefExecutor::Impl::compileOp(Operation *op, std::string &error) {
  auto features = [](Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); };
  auto floatIn = [&](Value v, int &slot) {
    if (!slots.count(v)) {
      error = "operand of " + op->getName().getStringRef().str() +
              " is not an fp32 activation the executor produced";
      return false;
    }
    slot = slotOf(v);
    return true;
  };
  auto positionsIn = [&](Value v) {
    if (!intArgs.count(v) || intArgs.lookup(v) != IntArg::Positions) {
      error = op->getName().getStringRef().str() + " positions must be the function's "
              "positions argument";
      return false;
    }
    return true;
  };

  if (auto e = dyn_cast<EmbedOp>(op)) {
    if (!intArgs.count(e.getTokens()) || intArgs.lookup(e.getTokens()) != IntArg::Tokens) {
      error = "kiln.embed must read the function's token argument";
      return false;
    }
    // The table's own row count is the id range; ids are checked when they arrive.
    const WeightView *table = store->find(e.getWeight().str());
    int64_t rows = table ? int64_t(table->numRows()) : 0;
    auto w = weight(op, e.getWeight(), rows, features(e), error, uint32_t(e.getFormat()));
    if (!w)
      return false;
    int out = newSlot(e);
    steps.push_back([w, out](Frame &f, std::string &err) {
      return embedRows(*w, *f.tokens, f.act[out], err);
    });
    return true;
  }
  if (auto n = dyn_cast<RmsNormOp>(op)) {
    int in;
    // Absent format: the kernels read an f32 scale.
    uint32_t fmt = n.getFormat() ? uint32_t(*n.getFormat()) : 0u /* f32 */;
    auto w = weight(op, n.getWeight(), 1, features(n), error, fmt);
    if (!w || !floatIn(n.getInput(), in))
      return false;
    int out = newSlot(n);
    float eps = n.getEps().convertToFloat();
    steps.push_back([w, in, out, eps](Frame &f, std::string &) {
      rmsNorm(f.act[in], *w, eps, f.act[out]);
      return true;
    });
    return true;
  }
  if (isa<LinearOp, LogitsOp>(op)) {
    Value input = op->getOperand(0), result = op->getResult(0);
    const WeightRead read = weightReadsOf(op).front();
    int in;
    auto w = weight(op, read.name, features(result), features(input), error, read.format);
    if (!w || !floatIn(input, in))
      return false;
    // The optional bias: a 1-D [out_features] vector added to every row.
    std::shared_ptr<Matrix> bias;
    if (auto l = dyn_cast<LinearOp>(op); l && l.getBias()) {
      const WeightView *bv = store->find(l.getBias()->str());
      if (bv && bv->dims.size() != 1) {
        error = "kiln.linear bias '" + l.getBias()->str() + "' must be a 1-D [" +
                std::to_string(features(result)) + "] vector, it has " +
                std::to_string(bv->dims.size()) + " dimensions";
        return false;
      }
      bias = weight(op, *l.getBias(), 1, features(result), error);
      if (!bias)
        return false;
    }
    int out = newSlot(result);
    steps.push_back([w, bias, in, out](Frame &f, std::string &) {
      f.act[out].noalias() = f.act[in] * w->transpose();
      if (bias)
        f.act[out].rowwise() += bias->row(0);
      return true;
    });
    return true;
  }
  if (auto n = dyn_cast<RmsNormalizeOp>(op)) {
    int in;
    if (!floatIn(n.getInput(), in))
      return false;
    auto ones = std::make_shared<Matrix>(Matrix::Ones(1, features(n))); // x * 1 is exact
    int out = newSlot(n);
    float eps = n.getEps().convertToFloat();
    steps.push_back([ones, in, out, eps](Frame &f, std::string &) {
      rmsNorm(f.act[in], *ones, eps, f.act[out]);
      return true;
    });
    return true;
  }
  if (auto fl = dyn_cast<FusedLinearOp>(op)) {
    // z = x W^T over the stacked weight, then the results' column ranges, z + residual,
    // or silu(z[:, 2j]) * z[:, 2j + 1].
    int in, res = -1;
    std::vector<int64_t> widths;
    int64_t rows = 0;
    for (Value r : fl.getResults())
      widths.push_back(features(r)), rows += features(r) * (fl.getSwiglu() ? 2 : 1);
    auto w = weight(op, fl.getWeight(), rows, features(fl.getInput()), error);
    if (!w || !floatIn(fl.getInput(), in) || (fl.getResidual() && !floatIn(fl.getResidual(), res)))
      return false;
    std::vector<int> outs;
    for (Value r : fl.getResults())
      outs.push_back(newSlot(r));
    bool swiglu = fl.getSwiglu();
    steps.push_back([w, in, res, outs, widths, swiglu](Frame &f, std::string &) {
      Matrix z = f.act[in] * w->transpose();
      if (swiglu) {
        Matrix &y = f.act[outs[0]];
        y.resize(z.rows(), widths[0]);
        for (Eigen::Index t = 0; t < z.rows(); ++t)
          for (int64_t j = 0; j < widths[0]; ++j) {
            const float g = z(t, 2 * j);
            y(t, j) = (g / (1.0f + std::exp(-g))) * z(t, 2 * j + 1);
          }
        return true;
      }
      if (res >= 0)
        z += f.act[res];
      int64_t col = 0;
      for (size_t k = 0; k < outs.size(); ++k) {
        f.act[outs[k]] = z.middleCols(col, widths[k]);
        col += widths[k];
      }
      return true;
    });
    return true;
  }
  if (auto r = dyn_cast<RopeOp>(op)) {
    int in;
    if (!floatIn(r.getInput(), in) || !positionsIn(r.getPositions()))
      return false;
    int out = newSlot(r);
    RopeParams p{int32_t(r.getHeadDim()), int32_t(r.getRotaryDims()),
                 r.getTheta().convertToFloat(),
                 r.getStyle() == RopeStyle::rotate_half};
    if (auto factors = r.getFreqFactors())
      p.freqFactors.assign(factors->begin(), factors->end());
    steps.push_back([p, in, out](Frame &f, std::string &) {
      applyRope(f.act[in], f.positions, p, f.act[out]);
      return true;
    });
    return true;
  }
  if (auto a = dyn_cast<AttentionOp>(op)) {
    int q, k, v;
    if (!floatIn(a.getQ(), q) || !floatIn(a.getK(), k) || !floatIn(a.getV(), v) ||
        !positionsIn(a.getPositions()))
      return false;
    AttentionParams p{int32_t(a.getNumHeads()), int32_t(a.getNumKvHeads()),
                      int32_t(a.getHeadDim()),
                      a.getScale().convertToFloat(), {}};
    // Fused RoPE (kiln-fuse-rope-into-attention): q and k arrive unrotated.
    std::optional<RopeParams> rope;
    if (a.getRopeRotaryDimsAttr())
      rope = RopeParams{int32_t(a.getHeadDim()), int32_t(*a.getRopeRotaryDims()),
                        a.getRopeThetaAttr().getValue().convertToFloat(),
                        *a.getRopeStyle() == RopeStyle::rotate_half};
    if (auto factors = a.getRopeFreqFactors())
      rope->freqFactors.assign(factors->begin(), factors->end());
    for (int32_t h = 0; h < p.heads; ++h)
      p.kvHeadOf.push_back(a.getKvHeadMap() ? (*a.getKvHeadMap())[h]
                                            : h / (p.heads / p.kvHeads));
    int64_t kvDim = features(a.getK());
    auto [it, fresh] = cache.try_emplace(a.getLayer());
    if (!fresh) {
      error = "two kiln.attention ops use KV cache layer " + std::to_string(a.getLayer());
      return false;
    }
    it->second.k = Matrix::Zero(maxCtx, kvDim);
    it->second.v = Matrix::Zero(maxCtx, kvDim);
    it->second.format = kvStorage;
    KvCache *kv = &it->second;
    int out = newSlot(a);
    size_t step = steps.size();
    steps.push_back([this, step, p, rope, kv, q, k, v, out](Frame &f, std::string &err) {
      const Matrix *qm = &f.act[q], *km = &f.act[k];
      Matrix qr, kr;
      if (rope) {
        applyRope(*qm, f.positions, *rope, qr);
        applyRope(*km, f.positions, *rope, kr);
        qm = &qr;
        km = &kr;
      }
      if (!attentionObserver)
        return attention(*qm, *km, f.act[v], f.positions, p, *kv, f.act[out], err);
      AttentionProbe probe = [&](Eigen::Index t, int32_t h, const Eigen::VectorXf &probs) {
        attentionObserver(stepOps[step], t, h, probs);
      };
      return attention(*qm, *km, f.act[v], f.positions, p, *kv, f.act[out], err, &probe);
    });
    return true;
  }
  if (auto s = dyn_cast<SiluOp>(op)) {
    int in;
    if (!floatIn(s.getInput(), in))
      return false;
    int out = newSlot(s);
    steps.push_back([in, out](Frame &f, std::string &) {
      f.act[out] = f.act[in].unaryExpr([](float x) { return x / (1.0f + std::exp(-x)); });
      return true;
    });
    return true;
  }
  if (isa<MulOp, AddOp>(op)) {
    int l, r;
    if (!floatIn(op->getOperand(0), l) || !floatIn(op->getOperand(1), r))
      return false;
    int out = newSlot(op->getResult(0));
    bool mul = isa<MulOp>(op);
    steps.push_back([l, r, out, mul](Frame &f, std::string &) {
      if (mul)
        f.act[out] = f.act[l].cwiseProduct(f.act[r]);
      else
        f.act[out] = f.act[l] + f.act[r];
      return true;
    });
    return true;
  }
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    if (ret.getNumOperands() != 1 || !floatIn(ret.getOperand(0), resultSlot))
      return false;
    return true;
  }
  error = "the reference executor does not run op '" + op->getName().getStringRef().str() + "'";
  return false;
}

bool RefExecutor::Impl::compile(func::FuncOp fn, std::string &error) {
  if (fn.getNumArguments() != 2) {
    error = "@forward must take (tokens, positions)";
    return false;
  }
  intArgs[fn.getArgument(0)] = IntArg::Tokens;
  intArgs[fn.getArgument(1)] = IntArg::Positions;
  uint32_t index = 0;
  for (Operation &op : fn.getBody().front()) {
    size_t before = steps.size();
    if (!compileOp(&op, error))
      return false;
    if (steps.size() != before) {
      ObservedOp info;
      info.index = index;
      info.name = op.getName().getStringRef().str();
      if (auto layer = op.getAttrOfType<IntegerAttr>(attr::kLayer))
        info.layer = int32_t(layer.getInt());
      if (SmallVector<WeightRead, 2> reads = weightReadsOf(&op); !reads.empty())
        info.weight = reads.front().name.str();
      if (isa<LinearOp, LogitsOp, FusedLinearOp>(op) && slots.count(op.getOperand(0)))
        info.input = slotOf(op.getOperand(0));
      stepOps.push_back(std::move(info));
      stepOut.push_back(slotOf(op.getResult(0)));
    }
    ++index;
  }
  if (resultSlot < 0) {
    error = "@forward returns nothing";
    return false;
  }
  return true;
}

RefExecutor::RefExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RefExecutor::~RefExecutor() = default;

std::unique_ptr<RefExecutor> RefExecutor::create(ModuleOp module, const WeightStore &weights,
                                                 uint32_t maxCtx, std::string &error,
                                                 KvStorage kv) {
  if (maxCtx == 0 || maxCtx > (1u << 20)) {
    error = "context size " + std::to_string(maxCtx) + " is out of range [1, 1048576]";
    return nullptr;
  }
  if (failed(mlir::verify(module))) {
    error = "the module does not verify";
    return nullptr;
  }
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.getBody().empty()) {
    error = "module has no @forward function";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->store = &weights;
  impl->maxCtx = maxCtx;
  impl->kvStorage = kv;
  if (!impl->compile(fn, error))
    return nullptr;
  auto resultType = cast<RankedTensorType>(fn.getResultTypes()[0]);
  impl->vocab = uint32_t(resultType.getDimSize(1));
  impl->slots.clear();
  impl->intArgs.clear();
  return std::unique_ptr<RefExecutor>(new RefExecutor(std::move(impl)));
}

uint32_t RefExecutor::vocabSize() const { return impl_->vocab; }
uint32_t RefExecutor::maxCtx() const { return impl_->maxCtx; }

void RefExecutor::resetCache() {
  for (auto &[layer, kv] : impl_->cache)
    kv.length = 0;
}

bool RefExecutor::forward(const std::vector<int32_t> &tokens, uint32_t startPos,
                          Matrix &logits, std::string &error) {
  if (tokens.empty()) {
    error = "forward needs at least one token";
    return false;
  }
  if (uint64_t(startPos) + tokens.size() > impl_->maxCtx) {
    error = "positions " + std::to_string(startPos) + ".." +
            std::to_string(startPos + tokens.size() - 1) + " exceed the context size " +
            std::to_string(impl_->maxCtx);
    return false;
  }
  Frame f;
  f.act.resize(impl_->numSlots);
  f.tokens = &tokens;
  for (size_t i = 0; i < tokens.size(); ++i)
    f.positions.push_back(int32_t(startPos + i));
  for (auto &[layer, kv] : impl_->cache)
    if (kv.length < startPos) {
      error = "KV cache layer " + std::to_string(layer) + " holds " +
              std::to_string(kv.length) + " positions but decoding starts at " +
              std::to_string(startPos);
      return false;
    }
  for (size_t i = 0; i < impl_->steps.size(); ++i) {
    if (impl_->inputObserver && impl_->stepOps[i].input >= 0)
      impl_->inputObserver(impl_->stepOps[i], f.act[size_t(impl_->stepOps[i].input)]);
    if (!impl_->steps[i](f, error))
      return false;
    if (impl_->resultObserver)
      impl_->resultObserver(impl_->stepOps[i], f.act[size_t(impl_->stepOut[i])]);
  }
  logits = std::move(f.act[impl_->resultSlot]);
  return true;
}

void RefExecutor::setResultObserver(ResultObserver observer) {
  impl_->resultObserver = std::move(observer);
}

void RefExecutor::setAttentionObserver(AttentionObserver observer) {
  impl_->attentionObserver = std::move(observer);
}

void RefExecutor::setInputObserver(InputObserver observer) {
  impl_->inputObserver = std::move(observer);
}

const std::vector<ObservedOp> &RefExecutor::ops() const { return impl_->stepOps; }

} // namespace kiln
