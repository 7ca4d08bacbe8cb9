//===- Importance.cpp - layer and head importance on calibration text -----===//
//
// One base pass over the calibration chunks records, per scored position, the full
// next-token distribution (as float probabilities), the hidden states at every layer
// boundary (block influence), the attention probabilities of every head (entropy) and,
// with a backward pass per chunk, the gradient of the mean NLL with respect to one gate
// per layer. Then each ablation (a layer's residual branches zeroed, or one query head's
// columns of the output projection zeroed) is one more pass over the same chunks, compared
// position by position with the stored base distribution.
//===----------------------------------------------------------------------===//
#include "compiler/analysis/Importance.h"

#include <cmath>
#include <limits>

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "compiler/analysis/GateGradient.h"
#include "compiler/analysis/ModelLayout.h"
#include "compiler/eval/RefExecutor.h"

namespace kiln::analysis {

namespace {

// Per scored position of the base model: its probabilities p (float) and, to get
// KL(p || q) from q's logits x with one pass, sum p log p and sum p (both over the stored
// floats): KL = sum p log p - sum p x + logsumexp(x) * sum p.
struct BaseDistributions {
  int32_t vocab = 0;
  std::vector<float> prob;     // [scored, vocab]
  std::vector<double> negEnt;  // sum p log p
  std::vector<double> probSum; // sum p
};

struct Chunking {
  uint32_t ctx = 0, first = 0; // scored rows first .. ctx-2
  size_t chunks = 0, perChunk = 0;
  size_t scored() const { return chunks * perChunk; }
};

std::vector<int32_t> chunkTokens(const CalibrationSet &calib, size_t c) {
  std::vector<int32_t> chunk(calib.tokens.begin() + long(c * calib.ctx),
                             calib.tokens.begin() + long((c + 1) * calib.ctx));
  chunk[0] = calib.bos;
  return chunk;
}

double logSumExp(const float *x, int32_t n) {
  double mx = x[0];
  for (int32_t i = 1; i < n; ++i)
    mx = std::max<double>(mx, x[i]);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i)
    sum += std::exp(double(x[i]) - mx);
  return mx + std::log(sum);
}

double cosine(const Eigen::Ref<const Eigen::RowVectorXf> &a,
              const Eigen::Ref<const Eigen::RowVectorXf> &b) {
  const Eigen::RowVectorXd x = a.cast<double>(), y = b.cast<double>();
  const double nx = x.norm(), ny = y.norm();
  return nx > 0 && ny > 0 ? x.dot(y) / (nx * ny) : 1.0;
}

// Mean KL(base || variant) and the variant's PPL over the same chunks.
bool variantPass(mlir::ModuleOp module, const WeightStore &store, const CalibrationSet &calib,
                 const Chunking &ch, const BaseDistributions &base, double &kld, double &ppl,
                 std::string &error) {
  auto exec = RefExecutor::create(module, store, ch.ctx, error);
  if (!exec)
    return false;
  const int32_t vocab = base.vocab;
  Matrix logits;
  double klSum = 0, nll = 0;
  size_t pos = 0;
  for (size_t c = 0; c < ch.chunks; ++c) {
    std::vector<int32_t> chunk = chunkTokens(calib, c);
    exec->resetCache();
    if (!exec->forward(chunk, 0, logits, error))
      return false;
    for (uint32_t j = ch.first; j + 1 < ch.ctx; ++j, ++pos) {
      const float *x = logits.row(j).data();
      const float *p = base.prob.data() + pos * size_t(vocab);
      const double lse = logSumExp(x, vocab);
      double px = 0;
      for (int32_t i = 0; i < vocab; ++i)
        px += double(p[i]) * double(x[i]);
      klSum += std::max(0.0, base.negEnt[pos] - px + lse * base.probSum[pos]);
      nll += lse - double(x[chunk[j + 1]]);
    }
  }
  kld = klSum / double(pos);
  ppl = std::exp(nll / double(pos));
  return true;
}

size_t numOps(mlir::ModuleOp module) {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("forward");
  return fn && !fn.getBody().empty() ? fn.getBody().front().getOperations().size() : 0;
}

} // namespace

bool measureImportance(mlir::ModuleOp module, const WeightStore &store, const CalibrationSet &calib,
                       ImportanceReport &out, std::string &error,
                       const ImportanceOptions &options) {
  out = ImportanceReport();
  Chunking ch;
  ch.ctx = calib.ctx;
  if (ch.ctx < 4) {
    error = "context " + std::to_string(ch.ctx) + " is too small to score (need at least 4)";
    return false;
  }
  ch.first = ch.ctx / 2;
  ch.perChunk = ch.ctx - 1 - ch.first;
  ch.chunks = calib.tokens.size() / ch.ctx;
  if (calib.maxChunks && ch.chunks > calib.maxChunks)
    ch.chunks = calib.maxChunks;
  if (ch.chunks == 0) {
    error = "the calibration text has " + std::to_string(calib.tokens.size()) +
            " tokens, fewer than one chunk of " + std::to_string(ch.ctx);
    return false;
  }
  std::vector<LayerLayout> layers;
  if (!findLayers(module, layers, error))
    return false;

  size_t totalPasses = 1;
  if (options.layerAblation)
    totalPasses += layers.size();
  if (options.headAblation)
    for (const LayerLayout &l : layers)
      totalPasses += size_t(l.heads);
  size_t passes = 0;
  auto progress = [&](const std::string &what) {
    if (options.progress)
      options.progress(what, passes, totalPasses);
    ++passes;
  };

  // ---- Base pass: distributions, block influence, entropy, gate gradients.
  progress("base");
  auto exec = RefExecutor::create(module, store, ch.ctx, error);
  if (!exec)
    return false;
  std::unique_ptr<GateGradient> grad;
  if (options.gradient && !(grad = GateGradient::create(module, store, layers, error)))
    return false;
  const size_t ops = numOps(module);
  std::vector<char> keep(ops, options.gradient);
  std::vector<int> attnLayer(ops, -1); // attention op index -> position in `layers`
  for (size_t k = 0; k < layers.size(); ++k) {
    keep[layers[k].inputOp] = keep[layers[k].outputOp] = 1;
    if (layers[k].attentionOp >= 0)
      attnLayer[size_t(layers[k].attentionOp)] = int(k);
  }
  std::vector<Matrix> acts(ops);
  exec->setResultObserver([&](const ObservedOp &op, const Matrix &r) {
    if (keep[op.index])
      acts[op.index] = r;
  });
  std::vector<std::vector<double>> entropy(layers.size());
  for (size_t k = 0; k < layers.size(); ++k)
    entropy[k].assign(size_t(layers[k].heads), 0.0);
  exec->setAttentionObserver(
      [&](const ObservedOp &op, Eigen::Index t, int32_t head, const Eigen::VectorXf &probs) {
        const int k = attnLayer[op.index];
        if (k < 0 || t < Eigen::Index(ch.first) || t + 1 >= Eigen::Index(ch.ctx))
          return;
        double h = 0;
        for (Eigen::Index i = 0; i < probs.size(); ++i)
          if (probs[i] > 0)
            h -= double(probs[i]) * std::log(double(probs[i]));
        entropy[size_t(k)][size_t(head)] += h;
      });

  const size_t n = ch.scored();
  BaseDistributions base;
  base.vocab = int32_t(exec->vocabSize());
  const size_t vocab = size_t(base.vocab);
  base.prob.resize(n * vocab);
  base.negEnt.resize(n);
  base.probSum.resize(n);
  std::vector<double> influence(layers.size(), 0.0), gate(layers.size(), 0.0), lp(vocab);
  double nll = 0;
  size_t pos = 0;
  Matrix logits, dLogits;
  for (size_t c = 0; c < ch.chunks; ++c) {
    std::vector<int32_t> chunk = chunkTokens(calib, c);
    exec->resetCache();
    if (!exec->forward(chunk, 0, logits, error))
      return false;
    if (grad)
      dLogits = Matrix::Zero(logits.rows(), logits.cols());
    for (uint32_t j = ch.first; j + 1 < ch.ctx; ++j, ++pos) {
      const float *x = logits.row(j).data();
      const double lse = logSumExp(x, base.vocab);
      float *p = base.prob.data() + pos * vocab;
      double negEnt = 0, sum = 0;
      for (size_t i = 0; i < vocab; ++i) {
        lp[i] = double(x[i]) - lse;
        p[i] = float(std::exp(lp[i]));
        negEnt += double(p[i]) * lp[i];
        sum += double(p[i]);
      }
      base.negEnt[pos] = negEnt;
      base.probSum[pos] = sum;
      const int32_t next = chunk[j + 1];
      nll -= lp[size_t(next)];
      if (grad) {
        // d(mean NLL)/d logits = (softmax - onehot(next)) / n.
        for (size_t i = 0; i < vocab; ++i)
          dLogits(j, Eigen::Index(i)) = float(std::exp(lp[i]) / double(n));
        dLogits(j, next) -= float(1.0 / double(n));
      }
      for (size_t k = 0; k < layers.size(); ++k)
        influence[k] +=
            1.0 - cosine(acts[layers[k].inputOp].row(j), acts[layers[k].outputOp].row(j));
    }
    if (grad && !grad->accumulate(acts, dLogits, gate, error))
      return false;
  }
  exec.reset();
  acts.clear();

  out.basePpl = std::exp(nll / double(n));
  out.ctx = ch.ctx;
  out.chunks = ch.chunks;
  out.scored = n;
  for (size_t k = 0; k < layers.size(); ++k) {
    LayerScore s;
    s.layer = layers[k].layer;
    s.blockInfluence = influence[k] / double(n);
    s.gradient = gate[k];
    s.gradientScore = std::fabs(gate[k]);
    out.layers.push_back(s);
    for (int32_t h = 0; h < layers[k].heads; ++h) {
      HeadScore hs;
      hs.layer = layers[k].layer;
      hs.head = h;
      hs.kvHead = layers[k].kvHeadOf[size_t(h)];
      hs.entropy = entropy[k][size_t(h)] / double(n);
      out.heads.push_back(hs);
    }
  }

  // ---- Ablations: one pass each over an overlay of the store.
  if (options.layerAblation)
    for (size_t k = 0; k < layers.size(); ++k) {
      progress("layer " + std::to_string(layers[k].layer));
      WeightStore overlay = overlayOf(store);
      if (!scaleBranches(overlay, layers[k], 0.0, error) ||
          !variantPass(module, overlay, calib, ch, base, out.layers[k].ablationKld,
                       out.layers[k].ablationPpl, error))
        return false;
    }
  if (options.headAblation) {
    size_t i = 0;
    for (const LayerLayout &layer : layers)
      for (int32_t h = 0; h < layer.heads; ++h, ++i) {
        progress("head " + std::to_string(layer.layer) + "." + std::to_string(h));
        WeightStore overlay = overlayOf(store);
        if (!zeroHead(overlay, layer, h, error) ||
            !variantPass(module, overlay, calib, ch, base, out.heads[i].ablationKld,
                         out.heads[i].ablationPpl, error))
          return false;
      }
  }

  // ---- How well the cheap scores predict the ablation ranking.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  out.blockInfluenceVsAblation = out.gradientVsAblation = out.headEntropyVsAblation = nan;
  if (options.layerAblation) {
    std::vector<double> abl, bi, gs;
    for (const LayerScore &s : out.layers) {
      abl.push_back(s.ablationKld);
      bi.push_back(s.blockInfluence);
      gs.push_back(s.gradientScore);
    }
    out.blockInfluenceVsAblation = spearman(bi, abl);
    if (options.gradient)
      out.gradientVsAblation = spearman(gs, abl);
  }
  if (options.headAblation) {
    std::vector<double> abl, ent;
    for (const HeadScore &s : out.heads) {
      abl.push_back(s.ablationKld);
      ent.push_back(s.entropy);
    }
    out.headEntropyVsAblation = spearman(ent, abl);
  }
  return true;
}

} // namespace kiln::analysis
