#include "compiler/analysis/GateGradient.h"

#include <cmath>
#include <map>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include "compiler/eval/OpKernels.h"
#include "dialects/kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln::analysis {

namespace {

enum class Kind { Leaf, RmsNorm, Linear, Rope, Attention, Silu, Mul, Add };

// One op of @forward as the backward pass needs it.
struct Node {
  Kind kind = Kind::Leaf;
  std::vector<int> in;                  // op index of each float operand
  std::shared_ptr<const Matrix> weight; // linear/logits [out, in]; rms_norm [1, n]
  float eps = 0;
  RopeParams rope{};
  AttentionParams attn{};
  int gate = -1;   // residual add: position in `layers` whose gate scales the branch
  int branch = -1; // residual add: op index of the branch operand
};

} // namespace

struct GateGradient::Impl {
  std::vector<Node> nodes; // by op index
  int result = -1;         // op index of the returned logits
  std::map<std::string, std::shared_ptr<const Matrix>> weights;
  const WeightStore *store = nullptr;

  std::shared_ptr<const Matrix> weight(StringRef name, std::string &error);
};

std::shared_ptr<const Matrix> GateGradient::Impl::weight(StringRef nameRef, std::string &error) {
  std::string name = nameRef.str();
  auto it = weights.find(name);
  if (it != weights.end())
    return it->second;
  const WeightView *w = store->find(name);
  std::vector<float> data;
  if (!w || !store->dequantize(name, data, error)) {
    if (!w)
      error = "weight '" + name + "' is not in the weight store";
    return nullptr;
  }
  auto m = std::make_shared<Matrix>(Eigen::Index(w->numRows()), Eigen::Index(w->rowLength()));
  std::copy(data.begin(), data.end(), m->data());
  return weights[name] = m;
}

GateGradient::GateGradient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GateGradient::~GateGradient() = default;

std::unique_ptr<GateGradient> GateGradient::create(ModuleOp module, const WeightStore &store,
                                                   const std::vector<LayerLayout> &layers,
                                                   std::string &error) {
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.getBody().empty()) {
    error = "module has no @forward function";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->store = &store;
  llvm::DenseMap<Operation *, int> index;
  std::map<int, std::pair<int, int>> gates; // add op index -> (layer position, branch op)
  for (size_t k = 0; k < layers.size(); ++k)
    for (const ResidualBranch &b : layers[k].branches)
      gates[int(b.addOp)] = {int(k), int(b.branchOp)};

  int next = 0;
  for (Operation &op : fn.getBody().front()) {
    index[&op] = next;
    Node n;
    auto operand = [&](Value v) {
      Operation *def = v.getDefiningOp();
      n.in.push_back(def ? index.lookup(def) : -1);
    };
    if (isa<EmbedOp>(op)) {
      n.kind = Kind::Leaf;
    } else if (auto r = dyn_cast<RmsNormOp>(op)) {
      n.kind = Kind::RmsNorm;
      operand(r.getInput());
      n.eps = r.getEps().convertToFloat();
      n.weight = impl->weight(r.getWeight(), error);
    } else if (isa<LinearOp, LogitsOp>(op)) {
      n.kind = Kind::Linear;
      operand(op.getOperand(0));
      n.weight = impl->weight(op.getAttrOfType<StringAttr>("weight").getValue(), error);
    } else if (auto r = dyn_cast<RopeOp>(op)) {
      n.kind = Kind::Rope;
      operand(r.getInput());
      n.rope = RopeParams{int32_t(r.getHeadDim()), int32_t(r.getRotaryDims()),
                          r.getTheta().convertToFloat(), r.getStyle() == RopeStyle::rotate_half};
      if (auto factors = r.getFreqFactors())
        n.rope.freqFactors.assign(factors->begin(), factors->end());
    } else if (auto a = dyn_cast<AttentionOp>(op)) {
      n.kind = Kind::Attention;
      operand(a.getQ());
      operand(a.getK());
      operand(a.getV());
      n.attn = AttentionParams{int32_t(a.getNumHeads()),
                               int32_t(a.getNumKvHeads()),
                               int32_t(a.getHeadDim()),
                               a.getScale().convertToFloat(),
                               {}};
      for (int32_t h = 0; h < n.attn.heads; ++h)
        n.attn.kvHeadOf.push_back(a.getKvHeadMap() ? (*a.getKvHeadMap())[size_t(h)]
                                                   : h / (n.attn.heads / n.attn.kvHeads));
    } else if (auto s = dyn_cast<SiluOp>(op)) {
      n.kind = Kind::Silu;
      operand(s.getInput());
    } else if (isa<MulOp, AddOp>(op)) {
      n.kind = isa<MulOp>(op) ? Kind::Mul : Kind::Add;
      operand(op.getOperand(0));
      operand(op.getOperand(1));
      auto g = gates.find(next);
      if (g != gates.end()) {
        n.gate = g->second.first;
        n.branch = g->second.second;
      }
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      Operation *def = ret.getNumOperands() == 1 ? ret.getOperand(0).getDefiningOp() : nullptr;
      impl->result = def ? index.lookup(def) : -1;
    } else {
      error =
          "the gradient score cannot differentiate op '" + op.getName().getStringRef().str() + "'";
      return nullptr;
    }
    if ((n.kind == Kind::RmsNorm || n.kind == Kind::Linear) && !n.weight)
      return nullptr;
    impl->nodes.push_back(std::move(n));
    ++next;
  }
  if (impl->result < 0) {
    error = "@forward does not return an op's result";
    return nullptr;
  }
  return std::unique_ptr<GateGradient>(new GateGradient(std::move(impl)));
}

namespace {

// Accumulates g into grads[i] (an empty matrix stands for zero).
void addTo(std::vector<Matrix> &grads, int i, const Matrix &g) {
  if (i < 0)
    return;
  Matrix &dst = grads[size_t(i)];
  if (dst.size() == 0)
    dst = g;
  else
    dst += g;
}

// y = x * s * w per row with s = (mean(x^2) + eps)^-1/2:
// dx = s * w.dy - x * s^3 / n * sum(w.dy.x).
Matrix rmsNormBackward(const Matrix &x, const Matrix &w, float eps, const Matrix &dy) {
  Matrix dx(x.rows(), x.cols());
  const double n = double(x.cols());
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    double sq = 0, dot = 0;
    for (Eigen::Index i = 0; i < x.cols(); ++i) {
      sq += double(x(t, i)) * double(x(t, i));
      dot += double(dy(t, i)) * double(w(0, i)) * double(x(t, i));
    }
    const double s = 1.0 / std::sqrt(sq / n + double(eps));
    const double c = s * s * s / n * dot;
    for (Eigen::Index i = 0; i < x.cols(); ++i)
      dx(t, i) = float(s * double(w(0, i)) * double(dy(t, i)) - double(x(t, i)) * c);
  }
  return dx;
}

// Causal softmax(scale q K^T) V per head over positions 0..T-1 (one chunk from an empty
// cache): dV = P^T dO, dP = dO V^T, dS = P.(dP - rowsum(dP.P)), dq = scale dS K,
// dK = scale dS^T q; GQA heads sharing a KV head add up.
void attentionBackward(const Matrix &q, const Matrix &k, const Matrix &v, const AttentionParams &p,
                       const Matrix &dy, Matrix &dq, Matrix &dk, Matrix &dv) {
  const Eigen::Index T = q.rows();
  const int32_t d = p.headDim;
  dq = Matrix::Zero(q.rows(), q.cols());
  dk = Matrix::Zero(k.rows(), k.cols());
  dv = Matrix::Zero(v.rows(), v.cols());
  Matrix P(T, T), dP(T, T);
  for (int32_t h = 0; h < p.heads; ++h) {
    const int32_t g = p.kvHeadOf[size_t(h)];
    auto qh = q.middleCols(h * d, d);
    auto kg = k.middleCols(g * d, d);
    auto vg = v.middleCols(g * d, d);
    auto dOh = dy.middleCols(h * d, d);
    P.noalias() = (qh * kg.transpose()) * p.scale;
    for (Eigen::Index t = 0; t < T; ++t) {
      auto row = P.row(t).head(t + 1);
      row = (row.array() - row.maxCoeff()).exp();
      row /= row.sum();
      P.row(t).tail(T - t - 1).setZero();
    }
    dP.noalias() = dOh * vg.transpose();
    for (Eigen::Index t = 0; t < T; ++t) {
      const float dot = P.row(t).head(t + 1).dot(dP.row(t).head(t + 1));
      dP.row(t).head(t + 1) =
          P.row(t).head(t + 1).cwiseProduct((dP.row(t).head(t + 1).array() - dot).matrix());
      dP.row(t).tail(T - t - 1).setZero();
    }
    dq.middleCols(h * d, d).noalias() += (dP * kg) * p.scale;
    dk.middleCols(g * d, d).noalias() += (dP.transpose() * qh) * p.scale;
    dv.middleCols(g * d, d).noalias() += P.transpose() * dOh;
  }
}

} // namespace

bool GateGradient::accumulate(const std::vector<Matrix> &acts, const Matrix &dLogits,
                              std::vector<double> &gateGrad, std::string &error) const {
  const std::vector<Node> &nodes = impl_->nodes;
  if (acts.size() < nodes.size()) {
    error = "the gradient needs the result of every op of @forward";
    return false;
  }
  std::vector<Matrix> grads(nodes.size());
  grads[size_t(impl_->result)] = dLogits;
  std::vector<int32_t> negPositions;
  for (int i = int(nodes.size()) - 1; i >= 0; --i) {
    const Node &n = nodes[size_t(i)];
    Matrix dy = std::move(grads[size_t(i)]);
    if (dy.size() == 0 || n.kind == Kind::Leaf)
      continue;
    auto in = [&](size_t k) -> const Matrix & { return acts[size_t(n.in[k])]; };
    switch (n.kind) {
    case Kind::RmsNorm:
      addTo(grads, n.in[0], rmsNormBackward(in(0), *n.weight, n.eps, dy));
      break;
    case Kind::Linear:
      addTo(grads, n.in[0], dy * *n.weight);
      break;
    case Kind::Rope: {
      // The rotation is orthogonal: its transpose rotates by the negated angles, which
      // applyRope builds from negated positions (float negation is exact).
      negPositions.resize(size_t(dy.rows()));
      for (Eigen::Index t = 0; t < dy.rows(); ++t)
        negPositions[size_t(t)] = -int32_t(t);
      Matrix dx;
      applyRope(dy, negPositions, n.rope, dx);
      addTo(grads, n.in[0], dx);
      break;
    }
    case Kind::Attention: {
      Matrix dq, dk, dv;
      attentionBackward(in(0), in(1), in(2), n.attn, dy, dq, dk, dv);
      addTo(grads, n.in[0], dq);
      addTo(grads, n.in[1], dk);
      addTo(grads, n.in[2], dv);
      break;
    }
    case Kind::Silu: {
      const Matrix &x = in(0);
      Matrix dx = x.binaryExpr(dy, [](float xv, float g) {
        const float s = 1.0f / (1.0f + std::exp(-xv));
        return g * s * (1.0f + xv * (1.0f - s));
      });
      addTo(grads, n.in[0], dx);
      break;
    }
    case Kind::Mul:
      addTo(grads, n.in[0], dy.cwiseProduct(in(1)));
      addTo(grads, n.in[1], dy.cwiseProduct(in(0)));
      break;
    case Kind::Add:
      if (n.gate >= 0)
        gateGrad[size_t(n.gate)] +=
            dy.cast<double>().cwiseProduct(acts[size_t(n.branch)].cast<double>()).sum();
      addTo(grads, n.in[0], dy);
      addTo(grads, n.in[1], dy);
      break;
    case Kind::Leaf:
      break;
    }
  }
  return true;
}

} // namespace kiln::analysis
