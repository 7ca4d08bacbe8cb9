//===- SlimmingSearch.cpp - slimming decisions measured on calibration text -===//
#include "compiler/pipelines/SlimmingSearch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringExtras.h"

#include "compiler/eval/Perplexity.h"
#include "compiler/eval/RefExecutor.h"
#include "models/weights/DerivedWeights.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "passes/slimming/SlimmingUtils.h"
#include "compiler/analysis/Importance.h"
#include "compiler/analysis/ModelLayout.h"

using namespace mlir;

namespace kiln::pipelines {

namespace {

constexpr double kMaxBudgetPercent = 1000.0;

std::string num(double v, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double ppl, double base) { return num(100.0 * (ppl / base - 1.0), 2); }

// "1,3" -> {1, 3}
bool parseLayerList(const std::string &text, std::vector<int32_t> &out, std::string &error) {
  SmallVector<StringRef> items;
  StringRef(text).split(items, ',', -1, /*KeepEmpty=*/true);
  for (StringRef item : items) {
    int32_t l;
    if (item.trim().getAsInteger(10, l) || l < 0) {
      error = "--prune-layers: '" + item.str() +
              "' is not a layer index (expected auto or "
              "a list like 1,3)";
      return false;
    }
    out.push_back(l);
  }
  return true;
}

// "2/layer" -> 2; false when the text is not of that form.
bool parsePerLayer(const std::string &text, int32_t &n) {
  StringRef s(text);
  return s.consume_back("/layer") && !s.trim().getAsInteger(10, n);
}

[[maybe_unused]] std::string specOf(const std::map<int32_t, std::set<int32_t>> &heads) {
  std::string s;
  for (const auto &[l, hs] : heads) {
    if (hs.empty())
      continue;
    s += (s.empty() ? "" : ";") + std::to_string(l) + ":";
    bool first = true;
    for (int32_t h : hs) {
      s += (first ? "" : ",") + std::to_string(h);
      first = false;
    }
  }
  return s;
}

std::string plusList(const std::vector<int32_t> &v) {
  return slimming::joinList(std::vector<int64_t>(v.begin(), v.end()));
}

class Search {
public:
  Search(ModuleOp module, WeightStore &store, const SlimmingRequest &req,
         std::vector<AppliedPass> &records)
      : module(module), store(store), req(req), records(records) {}

  bool layersAuto(double base, double limit, std::vector<int32_t> &removed, std::string &error);
  bool headsRanked(const std::vector<int32_t> &layers, int32_t perLayer, bool greedy, double base,
                   double limit, std::string &spec, std::string &error);

private:
  // Calibration PPL of the module with `candidate`'s slimming applied to a copy.
  bool measure(const KilnPipelineOptions &candidate, double &ppl, std::string &error) {
    OwningOpRef<ModuleOp> copy(module.clone());
    KilnPipelineOptions o = candidate;
    o.quiet = true;
    o.maxCtx = 0;
    std::vector<AppliedPass> ignored;
    return runSlimmingPasses(*copy, o, ignored, error) &&
           calibrationPpl(*copy, store, *req.calib, ppl, error);
  }
  void log(const std::string &line) {
    if (req.log)
      req.log(line);
  }

  ModuleOp module;
  WeightStore &store;
  const SlimmingRequest &req;
  std::vector<AppliedPass> &records;
};

bool Search::layersAuto(double base, double limit, std::vector<int32_t> &removed,
                        std::string &error) {
  std::vector<int32_t> layers;
  for (auto &entry : slimming::opsByLayer(module.lookupSymbol<func::FuncOp>("forward")))
    layers.push_back(entry.first);
  const std::string budget = num(req.maxPplIncrease, 2);
  for (int round = 1; layers.size() - removed.size() > 1; ++round) {
    int32_t best = -1;
    double bestPpl = INFINITY;
    for (int32_t l : layers) {
      if (std::count(removed.begin(), removed.end(), l))
        continue;
      KilnPipelineOptions candidate;
      candidate.pruneLayers = removed;
      candidate.pruneLayers.push_back(l);
      std::sort(candidate.pruneLayers.begin(), candidate.pruneLayers.end());
      double ppl;
      if (!measure(candidate, ppl, error))
        return false;
      records.push_back(
          {"kiln-prune-layers.search",
           "round=" + std::to_string(round) + ",remove=" + plusList(candidate.pruneLayers),
           "ppl=" + num(ppl) + ",increase_pct=" + percent(ppl, base) +
               ",within_budget=" + (ppl <= limit ? "yes" : "no")});
      log("prune-layers auto: round " + std::to_string(round) + ": without layers " +
          plusList(candidate.pruneLayers) + " PPL " + num(ppl) + " (" + percent(ppl, base) + "%)");
      if (ppl < bestPpl)
        best = l, bestPpl = ppl;
    }
    if (!(bestPpl <= limit)) {
      records.push_back({"kiln-prune-layers.decision", "round=" + std::to_string(round),
                         "stop=best candidate layer " + std::to_string(best) + " at +" +
                             percent(bestPpl, base) + "% exceeds +" + budget + "%"});
      if (removed.empty())
        log("prune-layers auto: no layer can be removed within +" + budget + "% (the best, layer " +
            std::to_string(best) + ", costs +" + percent(bestPpl, base) + "%); nothing pruned");
      break;
    }
    removed.push_back(best);
    std::sort(removed.begin(), removed.end());
    records.push_back({"kiln-prune-layers.decision", "round=" + std::to_string(round),
                       "removed=" + std::to_string(best) + ",ppl=" + num(bestPpl) +
                           ",increase_pct=" + percent(bestPpl, base)});
    log("prune-layers auto: removed layer " + std::to_string(best) + " (PPL " + num(bestPpl) +
        ", +" + percent(bestPpl, base) + "%)");
  }
  return true;
}

bool Search::headsRanked(const std::vector<int32_t> &layers, int32_t perLayer, bool greedy,
                         double base, double limit, std::string &spec, std::string &error) {
  // The ranking is measured on the model with the chosen layers already removed.
  OwningOpRef<ModuleOp> pruned(module.clone());
  KilnPipelineOptions o;
  o.pruneLayers = layers;
  o.quiet = true;
  std::vector<AppliedPass> ignored;
  if (!runSlimmingPasses(*pruned, o, ignored, error) ||
      !materializeDerivedWeights(*pruned, store, error))
    return false;
  if (!greedy) {
    std::string tooMany;
    pruned->walk([&](AttentionOp a) {
      if (tooMany.empty() && perLayer >= int32_t(a.getNumHeads()))
        tooMany = "--prune-heads " + std::to_string(perLayer) + "/layer: layer " +
                  std::to_string(a.getLayer()) + " has " + std::to_string(a.getNumHeads()) +
                  " heads; at least one must remain";
    });
    if (!tooMany.empty()) {
      error = tooMany;
      return false;
    }
  }
  analysis::CalibrationSet cs;
  cs.tokens = req.calib->tokens;
  cs.bos = req.calib->bos;
  cs.ctx = req.calib->ctx;
  cs.maxChunks = req.calib->maxChunks;
  analysis::ImportanceOptions io;
  io.layerAblation = false;
  io.gradient = false;
  io.headAblation = true;
  io.progress = [&](const std::string &what, size_t done, size_t total) {
    if (done % 8 == 0)
      log("prune-heads: measuring head importance (" + what + ", " + std::to_string(done) + "/" +
          std::to_string(total) + ")");
  };
  analysis::ImportanceReport report;
  if (!analysis::measureImportance(*pruned, store, cs, report, error, io))
    return false;

  std::vector<analysis::HeadScore> order = report.heads;
  std::stable_sort(order.begin(), order.end(), [](const auto &a, const auto &b) {
    return a.ablationKld != b.ablationKld ? a.ablationKld < b.ablationKld : a.entropy < b.entropy;
  });
  std::map<int32_t, int32_t> headsIn;
  std::map<int32_t, std::string> scores;
  for (const analysis::HeadScore &h : report.heads) {
    ++headsIn[h.layer];
    std::string &s = scores[h.layer];
    s += (s.empty() ? "" : ",") + ("h" + std::to_string(h.head) + "_kld=" + num(h.ablationKld, 6) +
                                   ",h" + std::to_string(h.head) + "_entropy=" + num(h.entropy));
  }
  for (const auto &[l, s] : scores)
    records.push_back(
        {"head-importance", "layer=" + std::to_string(l) + ",calib_ppl=" + num(report.basePpl), s});

  std::map<int32_t, std::set<int32_t>> drop;
  if (!greedy) {
    for (const auto &[l, n] : headsIn)
      if (perLayer >= n) {
        error = "--prune-heads " + std::to_string(perLayer) + "/layer: layer " + std::to_string(l) +
                " has " + std::to_string(n) + " heads; at least one must remain";
        return false;
      }
    for (const analysis::HeadScore &h : order)
      if (int32_t(drop[h.layer].size()) < perLayer)
        drop[h.layer].insert(h.head);
    for (const auto &[l, hs] : drop)
      for (int32_t h : hs)
        records.push_back({"kiln-prune-heads.decision",
                           "layer=" + std::to_string(l) + ",head=" + std::to_string(h),
                           "removed=yes,rule=" + std::to_string(perLayer) + "/layer"});
    spec = specOf(drop);
    return true;
  }

  // Removes heads in ranking order while the measured PPL stays within the budget: the
  // first head that would exceed it ends the search (trying every later head would let
  // calibration noise pick the cuts).
  const std::string budget = num(req.maxPplIncrease, 2);
  size_t rank = 0, accepted = 0;
  double lastPpl = base;
  for (const analysis::HeadScore &h : order) {
    ++rank;
    std::string where = "layer=" + std::to_string(h.layer) + ",head=" + std::to_string(h.head) +
                        ",rank=" + std::to_string(rank);
    if (int32_t(drop[h.layer].size()) + 1 >= headsIn[h.layer]) {
      records.push_back({"kiln-prune-heads.decision", where, "removed=no,reason=last head"});
      continue;
    }
    auto trial = drop;
    trial[h.layer].insert(h.head);
    KilnPipelineOptions candidate;
    candidate.pruneLayers = layers;
    candidate.pruneHeads = specOf(trial);
    double ppl;
    if (!measure(candidate, ppl, error))
      return false;
    bool ok = ppl <= limit;
    records.push_back({"kiln-prune-heads.decision", where,
                       std::string("removed=") + (ok ? "yes" : "no") +
                           ",kld=" + num(h.ablationKld, 6) + ",entropy=" + num(h.entropy) +
                           ",ppl=" + num(ppl) + ",increase_pct=" + percent(ppl, base)});
    log("prune-heads auto: layer " + std::to_string(h.layer) + " head " + std::to_string(h.head) +
        " (rank " + std::to_string(rank) + ", KLD " + num(h.ablationKld, 6) + "): PPL " + num(ppl) +
        " (+" + percent(ppl, base) + "%) " + (ok ? "removed" : "over the budget: stop"));
    if (!ok) {
      records.push_back({"kiln-prune-heads.decision", "rank=" + std::to_string(rank),
                         "stop=layer " + std::to_string(h.layer) + " head " +
                             std::to_string(h.head) + " at +" + percent(ppl, base) + "% exceeds +" +
                             budget + "%"});
      break;
    }
    drop = std::move(trial);
    ++accepted;
    lastPpl = ppl;
  }
  if (!accepted)
    log("prune-heads auto: no head can be removed within +" + budget +
        "% (the least important costs more); nothing pruned");
  else
    log("prune-heads auto: removed " + std::to_string(accepted) + " heads, calibration PPL " +
        num(lastPpl) + " (+" + percent(lastPpl, base) + "%)");
  spec = specOf(drop);
  return true;
}

// "0:1,5;3:2" -> {0: {1, 5}, 3: {2}} (already validated by the pass or the search).
std::map<int32_t, std::set<int32_t>> parseHeadSpec(const std::string &spec) {
  std::map<int32_t, std::set<int32_t>> out;
  SmallVector<StringRef> groups;
  StringRef(spec).split(groups, ';', -1, /*KeepEmpty=*/false);
  for (StringRef g : groups) {
    auto [layer, heads] = g.split(':');
    int32_t l;
    if (layer.trim().getAsInteger(10, l))
      continue;
    SmallVector<StringRef> hs;
    heads.split(hs, ',', -1, false);
    for (StringRef h : hs) {
      int32_t v;
      if (!h.trim().getAsInteger(10, v))
        out[l].insert(v);
    }
  }
  return out;
}

// Mean outputs of the unpruned `module` on the scored calibration positions: the attention
// result of every layer in `headLayers`, the sum of the residual branches of every layer
// in `layers`.
bool measureCompensation(ModuleOp module, WeightStore &store, const Calibration &calib,
                         const std::set<int32_t> &headLayers, const std::set<int32_t> &layers,
                         CompensationStats &stats, std::string &error) {
  std::vector<analysis::LayerLayout> layouts;
  if (!analysis::findLayers(module, layouts, error) ||
      !materializeDerivedWeights(module, store, error))
    return false;
  std::map<uint32_t, std::pair<int32_t, bool>> watch; // op index -> (layer, attention?)
  for (const analysis::LayerLayout &l : layouts) {
    if (headLayers.count(l.layer) && l.attentionOp >= 0) {
      watch[uint32_t(l.attentionOp)] = {l.layer, true};
      stats.headDim[l.layer] = l.headDim;
      stats.attnOutWeight[l.layer] = l.attnOutWeight;
    }
    if (layers.count(l.layer))
      for (const analysis::ResidualBranch &b : l.branches)
        watch[b.branchOp] = {l.layer, false};
  }
  auto exec = RefExecutor::create(module, store, calib.ctx, error);
  if (!exec)
    return false;
  // The rows perplexity() scores: first..ctx-2 of every chunk.
  const Eigen::Index first = Eigen::Index(calib.ctx / 2);
  exec->setResultObserver([&](const ObservedOp &op, const Matrix &r) {
    auto it = watch.find(op.index);
    if (it == watch.end())
      return;
    auto &acc = (it->second.second ? stats.attention : stats.branches)[it->second.first];
    acc.resize(size_t(r.cols()), 0.0);
    for (Eigen::Index t = first; t + 1 < r.rows(); ++t)
      for (Eigen::Index c = 0; c < r.cols(); ++c)
        acc[size_t(c)] += double(r(t, c));
  });
  PerplexityResult pr;
  if (!perplexity(*exec, nullptr, calib.tokens, calib.bos, calib.ctx, calib.maxChunks, pr, error))
    return false;
  stats.positions = pr.scored;
  for (auto *m : {&stats.attention, &stats.branches})
    for (auto &[l, v] : *m)
      for (double &x : v)
        x /= double(std::max<size_t>(pr.scored, 1));
  stats.measured = true;
  return true;
}

// Adds the compensation biases to `slimmed`. `notes`: what was done or skipped, per target.
bool applyCompensation(ModuleOp slimmed, WeightStore &store, const KilnPipelineOptions &applied,
                       const CompensationStats &stats, std::vector<std::string> &notes,
                       int &biases, std::string &error) {
  biases = 0;
  auto fn = slimmed.lookupSymbol<func::FuncOp>("forward");
  std::vector<analysis::LayerLayout> layouts;
  if (!fn || !analysis::findLayers(slimmed, layouts, error))
    return false;
  std::vector<Operation *> body;
  for (Operation &op : fn.getBody().front())
    body.push_back(&op);
  std::map<Operation *, std::vector<double>> add; // target linear -> bias to add
  std::map<Operation *, int32_t> targetLayer;

  // Heads: W_o[:, removed columns] . mean of the removed heads' outputs.
  for (const auto &[l, heads] : parseHeadSpec(applied.pruneHeads)) {
    auto mean = stats.attention.find(l);
    const analysis::LayerLayout *layout = nullptr;
    for (const auto &x : layouts)
      if (x.layer == l && x.attentionOp >= 0)
        layout = &x;
    if (mean == stats.attention.end() || !layout)
      continue;
    LinearOp wo;
    for (Operation *user : body[size_t(layout->attentionOp)]->getUsers())
      if (auto lin = dyn_cast<LinearOp>(user))
        wo = lin;
    const std::string &wName = stats.attnOutWeight.at(l);
    const WeightView *wv = store.find(wName);
    std::vector<float> w;
    if (!wo || !wv || !store.dequantize(wName, w, error)) {
      if (error.empty())
        error = "compensation: layer " + std::to_string(l) + " has no attention output projection";
      return false;
    }
    const uint64_t cols = wv->rowLength(), rows = wv->numRows();
    const int32_t hd = stats.headDim.at(l);
    if (cols != mean->second.size()) {
      error = "compensation: layer " + std::to_string(l) + ": '" + wName + "' has " +
              std::to_string(cols) + " columns for " + std::to_string(mean->second.size()) +
              " attention features";
      return false;
    }
    std::vector<double> &b = add[wo.getOperation()];
    b.resize(rows, 0.0);
    targetLayer[wo.getOperation()] = l;
    for (uint64_t o = 0; o < rows; ++o)
      for (int32_t h : heads)
        for (int32_t d = 0; d < hd; ++d) {
          const uint64_t c = uint64_t(h) * uint64_t(hd) + uint64_t(d);
          b[o] += double(w[o * cols + c]) * mean->second[c];
        }
    notes.push_back("heads " + plusList(std::vector<int32_t>(heads.begin(), heads.end())) +
                    " of layer " + std::to_string(l) + " -> bias of " + wo.getWeight().str());
  }

  // Layers: the mean of both branches, on the last branch projection of the nearest kept
  // layer below.
  for (int32_t l : applied.pruneLayers) {
    auto mean = stats.branches.find(l);
    if (mean == stats.branches.end())
      continue;
    const analysis::LayerLayout *below = nullptr;
    for (const auto &x : layouts)
      if (x.layer < l && !x.branches.empty() && (!below || x.layer > below->layer))
        below = &x;
    if (!below) {
      notes.push_back("no compensation for layer " + std::to_string(l) +
                      " (no earlier layer's projection)");
      continue;
    }
    auto target = dyn_cast<LinearOp>(body[below->branches.back().branchOp]);
    if (!target || slimming::features(target.getResult()) != int64_t(mean->second.size())) {
      notes.push_back("no compensation for layer " + std::to_string(l) +
                      " (the projection below does not write the residual stream)");
      continue;
    }
    std::vector<double> &b = add[target.getOperation()];
    b.resize(mean->second.size(), 0.0);
    targetLayer[target.getOperation()] = below->layer;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] += mean->second[i];
    notes.push_back("layer " + std::to_string(l) + " -> bias of " + target.getWeight().str());
  }

  Builder builder(slimmed.getContext());
  auto derived = [&]() { return slimmed->getAttrOfType<DictionaryAttr>(kDerivedWeightsAttr); };
  for (auto &[op, b] : add) {
    auto lin = cast<LinearOp>(op);
    std::vector<float> bias(b.begin(), b.end());
    if (auto old = lin.getBias()) {
      std::vector<float> prev;
      if (!store.dequantize(old->str(), prev, error))
        return false;
      if (prev.size() != bias.size()) {
        error = "compensation: bias '" + old->str() + "' has " + std::to_string(prev.size()) +
                " values, the projection writes " + std::to_string(bias.size());
        return false;
      }
      for (size_t i = 0; i < bias.size(); ++i)
        bias[i] += prev[i];
    }
    std::string base = lin.getWeight().str();
    if (size_t dot = base.find(".weight"); dot != std::string::npos)
      base = base.substr(0, dot);
    std::string name;
    for (int n = 0;; ++n) {
      name = base + ".comp_bias" + (n ? std::to_string(n) : "");
      // Unique among the module's own recipes (a copy measured before may have left the
      // same name in the store; materialising replaces it).
      auto all = derived();
      if (!(all && all.get(name)) && name != lin.getBias().value_or(""))
        break;
    }
    addDerivedWeight(slimmed, name,
                     derivedRecipe(builder.getContext(), DeriveOp::values,
                                   {builder.getNamedAttr("values",
                                                         builder.getDenseF32ArrayAttr(bias))}));
    lin.setBiasAttr(builder.getStringAttr(name));
    ++biases;
  }
  return materializeDerivedWeights(slimmed, store, error);
}

} // namespace

Footprint footprintOf(ModuleOp module) {
  Footprint f;
  module.walk([&](Operation *op) { f.params += slimming::parameterCount(op); });
  f.kvBytesPerToken = slimming::kvBytesPerToken(module);
  return f;
}

bool calibrationPpl(ModuleOp module, WeightStore &store, const Calibration &calib, double &ppl,
                    std::string &error) {
  if (!materializeDerivedWeights(module, store, error))
    return false;
  auto exec = RefExecutor::create(module, store, calib.ctx, error);
  if (!exec)
    return false;
  PerplexityResult r;
  if (!perplexity(*exec, nullptr, calib.tokens, calib.bos, calib.ctx, calib.maxChunks, r, error))
    return false;
  ppl = r.ppl;
  return true;
}

bool resolveSlimming(ModuleOp module, WeightStore &store, const SlimmingRequest &req,
                     KilnPipelineOptions &out, SlimmingPlan &plan, std::vector<AppliedPass> &records,
                     std::string &error) {
  const bool layersAuto = req.layers == "auto", headsAuto = req.heads == "auto";
  int32_t perLayer = 0;
  const bool headsPerLayer = !headsAuto && parsePerLayer(req.heads, perLayer);
  const bool budgetGiven = !std::isnan(req.maxPplIncrease);
  if (budgetGiven && !(req.maxPplIncrease >= 0 && req.maxPplIncrease <= kMaxBudgetPercent)) {
    error = "--max-ppl-increase must be a percentage in [0, " + num(kMaxBudgetPercent, 0) +
            "], got " + num(req.maxPplIncrease, 2);
    return false;
  }
  if (budgetGiven && !layersAuto && !headsAuto) {
    error = "--max-ppl-increase applies to --prune-layers auto or --prune-heads auto";
    return false;
  }
  if ((layersAuto || headsAuto) && !budgetGiven) {
    error = std::string(layersAuto ? "--prune-layers" : "--prune-heads") +
            " auto needs a quality budget: --max-ppl-increase P (percent)";
    return false;
  }
  if ((layersAuto || headsAuto || headsPerLayer) && !req.calib) {
    error = std::string(layersAuto ? "--prune-layers auto" : "--prune-heads " + req.heads) +
            " measures on calibration text: give --calib TEXT";
    return false;
  }
  if (req.compensate != "on" && req.compensate != "off" && req.compensate != "auto") {
    error = "--compensate must be on, off or auto, got '" + req.compensate + "'";
    return false;
  }
  if (req.compensate == "on" && !req.calib && (!req.layers.empty() || !req.heads.empty())) {
    error = "--compensate on measures on calibration text: give --calib TEXT";
    return false;
  }
  if (headsPerLayer && perLayer < 1) {
    error = "--prune-heads " + req.heads + ": the count per layer must be at least 1";
    return false;
  }
  if (!req.layers.empty() && !layersAuto && !parseLayerList(req.layers, out.pruneLayers, error))
    return false;
  out.maxCtx = req.maxCtx;
  if (!req.heads.empty() && !headsAuto && !headsPerLayer) {
    if (req.heads.find(':') == std::string::npos) {
      error = "--prune-heads: '" + req.heads + "' is not auto, N/layer or LAYER:HEAD,...;...";
      return false;
    }
    out.pruneHeads = req.heads;
  }

  plan.before = footprintOf(module);
  if (!req.calib)
    return true;
  const Calibration &calib = *req.calib;
  if (!calibrationPpl(module, store, calib, plan.basePpl, error))
    return false;
  const double limit = budgetGiven ? plan.basePpl * (1.0 + req.maxPplIncrease / 100.0) : 0;
  std::string calibParams = "text=" + calib.name + ",ctx=" + std::to_string(calib.ctx) +
                            ",tokens=" + std::to_string(calib.tokens.size());
  std::string calibEffects = "base_ppl=" + num(plan.basePpl);
  if (budgetGiven)
    calibEffects +=
        ",max_ppl_increase_pct=" + num(req.maxPplIncrease, 2) + ",ppl_limit=" + num(limit);
  records.push_back({"slimming-calibration", calibParams, calibEffects});
  if (req.log)
    req.log("calibration " + calib.name + ": " + std::to_string(calib.tokens.size()) +
            " tokens, chunks of " + std::to_string(calib.ctx) + ", PPL " + num(plan.basePpl) +
            (budgetGiven ? ", limit " + num(limit) + " (+" + num(req.maxPplIncrease, 2) + "%)"
                         : std::string()));

  Search search(module, store, req, records);
  if (layersAuto && !search.layersAuto(plan.basePpl, limit, out.pruneLayers, error))
    return false;
  if ((headsAuto || headsPerLayer) &&
      !search.headsRanked(out.pruneLayers, perLayer, headsAuto, plan.basePpl, limit, out.pruneHeads,
                          error))
    return false;
  if (req.compensate != "off" && (!out.pruneLayers.empty() || !out.pruneHeads.empty())) {
    std::set<int32_t> headLayers, layers(out.pruneLayers.begin(), out.pruneLayers.end());
    for (const auto &entry : parseHeadSpec(out.pruneHeads))
      headLayers.insert(entry.first);
    if (!measureCompensation(module, store, calib, headLayers, layers, plan.compensation, error))
      return false;
  }
  return true;
}

bool compensateSlimming(ModuleOp slimmed, WeightStore &store, const SlimmingRequest &req,
                        const KilnPipelineOptions &applied, const SlimmingPlan &plan,
                        std::vector<AppliedPass> &records, std::string &error) {
  auto log = [&](const std::string &line) {
    if (req.log)
      req.log(line);
  };
  if (applied.pruneLayers.empty() && applied.pruneHeads.empty())
    return true;
  if (req.compensate == "off") {
    records.push_back({"kiln-compensate", "mode=off", "applied=no"});
    return true;
  }
  if (!plan.compensation.measured || !req.calib) {
    records.push_back({"kiln-compensate", "mode=" + req.compensate,
                       "applied=no,reason=no calibration text"});
    return true;
  }
  const Calibration &calib = *req.calib;
  OwningOpRef<ModuleOp> with(slimmed.clone());
  std::vector<std::string> notes;
  int biases = 0;
  if (!applyCompensation(*with, store, applied, plan.compensation, notes, biases, error))
    return false;
  for (const std::string &n : notes)
    log("compensation: " + n);
  std::string params = "mode=" + req.compensate + ",calib=" + calib.name +
                       ",ctx=" + std::to_string(calib.ctx) +
                       ",positions=" + std::to_string(plan.compensation.positions);
  if (biases == 0) {
    records.push_back({"kiln-compensate", params, "applied=no,reason=nothing to compensate"});
    return true;
  }
  double without, withPpl;
  if (!calibrationPpl(slimmed, store, calib, without, error) ||
      !calibrationPpl(*with, store, calib, withPpl, error))
    return false;
  const bool keep = req.compensate == "on" || withPpl < without;
  std::string effects = "ppl_without=" + num(without) + ",ppl_with=" + num(withPpl) +
                        ",biases=" + std::to_string(biases) +
                        ",applied=" + (keep ? "yes" : "no");
  for (const std::string &n : notes)
    if (n.rfind("no compensation", 0) == 0)
      effects += ",note=" + n.substr(0, n.find(" ("));
  records.push_back({"kiln-compensate", params, effects});
  log("compensation (" + req.compensate + "): calibration PPL without " + num(without) +
      ", with " + num(withPpl) + " (" + std::to_string(biases) + " biases): " +
      (keep ? "applied" : "not applied"));
  if (!keep)
    return true;
  // Apply to the module itself (same inputs, same biases).
  notes.clear();
  return applyCompensation(slimmed, store, applied, plan.compensation, notes, biases, error);
}

bool recordSlimmingResult(ModuleOp slimmed, WeightStore &store, const SlimmingRequest &req,
                          const SlimmingPlan &plan, std::vector<AppliedPass> &records,
                          std::string &error) {
  Footprint after = footprintOf(slimmed);
  if (after.params == plan.before.params && after.kvBytesPerToken == plan.before.kvBytesPerToken)
    return true;
  std::string effects =
      "params_before=" + std::to_string(plan.before.params) +
      ",params_after=" + std::to_string(after.params) +
      ",params_removed=" + std::to_string(plan.before.params - after.params) +
      ",kv_bytes_per_token_before=" + std::to_string(plan.before.kvBytesPerToken) +
      ",kv_bytes_per_token_after=" + std::to_string(after.kvBytesPerToken);
  std::string params = "counted=projection and norm weights of @forward";
  std::string line = "slimming: parameters " + std::to_string(plan.before.params) + " -> " +
                     std::to_string(after.params) + ", KV bytes per token " +
                     std::to_string(plan.before.kvBytesPerToken) + " -> " +
                     std::to_string(after.kvBytesPerToken);
  if (req.calib && !std::isnan(plan.basePpl)) {
    double ppl;
    if (!calibrationPpl(slimmed, store, *req.calib, ppl, error))
      return false;
    params += ",calib=" + req.calib->name + ",ctx=" + std::to_string(req.calib->ctx);
    effects += ",ppl_before=" + num(plan.basePpl) + ",ppl_after=" + num(ppl) +
               ",increase_pct=" + percent(ppl, plan.basePpl);
    line += ", calibration PPL " + num(plan.basePpl) + " -> " + num(ppl) + " (" +
            (ppl >= plan.basePpl ? "+" : "") + percent(ppl, plan.basePpl) + "%)";
  }
  records.push_back({"slimming-result", params, effects});
  if (req.log)
    req.log(line);
  return true;
}

} // namespace kiln::pipelines
