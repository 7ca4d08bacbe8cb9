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
#include "compiler/weights/DerivedWeights.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "passes/slimming/SlimmingUtils.h"
#include "compiler/analysis/Importance.h"

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
  bool measure(const CompileOptions &candidate, double &ppl, std::string &error) {
    OwningOpRef<ModuleOp> copy(module.clone());
    CompileOptions o = candidate;
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
      CompileOptions candidate;
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
  CompileOptions o;
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
    CompileOptions candidate;
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
                     CompileOptions &out, SlimmingPlan &plan, std::vector<AppliedPass> &records,
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
  return true;
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
    line += ", calibration PPL " + num(plan.basePpl) + " -> " + num(ppl) + " (+" +
            percent(ppl, plan.basePpl) + "%)";
  }
  records.push_back({"slimming-result", params, effects});
  if (req.log)
    req.log(line);
  return true;
}

} // namespace kiln::pipelines
