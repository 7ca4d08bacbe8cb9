//===- PrecisionSearch.cpp - storage formats chosen from measured sensitivity -===//
#include "compiler/pipelines/PrecisionSearch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "mlir/IR/OwningOpRef.h"

#include "compiler/eval/RefExecutor.h"
#include "compiler/pipelines/CalibrationKld.h"
#include "compiler/pipelines/PrecisionKnapsack.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "passes/precision/PrecisionSpec.h"
#include "passes/precision/WeightReads.h"

using namespace mlir;

namespace kiln::pipelines {

namespace {

std::string num(double v, const char *fmt = "%.6g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A positive finite number, or one clear error naming the flag.
bool parsePositive(const std::string &flag, const std::string &text, double &v,
                   std::string &error) {
  char *end = nullptr;
  v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0) {
    error = flag + " must be a positive finite number, got '" + text + "'";
    return false;
  }
  return true;
}

// One weight whose format the search decides, with every op that reads it.
struct Unit {
  std::string weight, cls;
  std::vector<Operation *> reads;
  uint64_t elements = 0, rowLength = 0, rows = 0;
  std::vector<uint32_t> formats; // candidates, f32 first
  std::vector<uint64_t> bytes;
  std::vector<double> kld;
};

void setUnit(const Unit &u, uint32_t format) {
  for (Operation *op : u.reads)
    precision::setFormat(op, format);
}

bool collectUnits(ModuleOp module, const WeightStore &store, const PrecisionRequest &req,
                  std::vector<Unit> &units, uint64_t &fixedBytes, uint64_t &fixedElements,
                  std::string &error) {
  std::map<std::string, size_t> index;
  fixedBytes = fixedElements = 0;
  for (const precision::WeightRead &r : precision::weightReads(module)) {
    const WeightView *w = store.find(r.weight);
    if (!w) {
      error = "weight '" + r.weight + "' is not in the weight store";
      return false;
    }
    std::string cls = precision::classOf(r.kind, r.weight);
    auto [it, fresh] = index.try_emplace(r.weight, units.size());
    if (!fresh) {
      Unit &u = units[it->second];
      if (u.cls != cls)
        u.cls += "+" + cls; // a tied table: one format for both reads
      u.reads.push_back(r.op);
      continue;
    }
    Unit u;
    u.weight = r.weight;
    u.cls = cls.empty() ? "other" : cls;
    u.reads = {r.op};
    u.rowLength = w->rowLength();
    u.rows = w->numRows();
    u.elements = u.rowLength * u.rows;
    for (uint32_t f : precision::supportedFormats())
      if ((r.kind != "rms_norm" || precision::normFormat(f)) &&
          precision::candidateFormat(f, u.rowLength)) {
        u.formats.push_back(f);
        u.bytes.push_back(precision::storedBytes(f, u.rowLength, u.rows,
                                                 r.kind == "linear" || r.kind == "logits",
                                                 req.packRows, req.rowAlign));
      }
    units.push_back(std::move(u));
    // A linear's bias is stored f32 whatever the format: a fixed cost of the budget.
    if (auto bias = r.op->getAttrOfType<StringAttr>("bias"))
      if (const WeightView *b = store.find(bias.str()); b && index.emplace(bias.str(), ~size_t(0)).second) {
        fixedElements += b->rowLength() * b->numRows();
        fixedBytes += 4 * b->rowLength() * b->numRows();
      }
  }
  return true;
}

bool resolveAuto(ModuleOp module, const WeightStore &store, const PrecisionRequest &req,
                 KilnPipelineOptions &out, std::vector<AppliedPass> &records, std::string &error) {
  auto log = [&](const std::string &line) {
    if (req.log)
      req.log(line);
  };
  if (req.bpw.empty() == req.maxWeightBytes.empty()) {
    error = req.bpw.empty() ? "--precision auto needs a budget: --bpw B or --max-weight-bytes N"
                            : "give --bpw or --max-weight-bytes, not both";
    return false;
  }
  double budgetValue;
  if (!req.bpw.empty() ? !parsePositive("--bpw", req.bpw, budgetValue, error)
                       : !parsePositive("--max-weight-bytes", req.maxWeightBytes, budgetValue,
                                        error))
    return false;
  if (!req.calib) {
    error = "--precision auto needs --calib TEXT (the calibration text it measures on)";
    return false;
  }

  OwningOpRef<ModuleOp> ref(module.clone());
  std::vector<Unit> units;
  uint64_t fixedBytes, fixedElements;
  if (!collectUnits(*ref, store, req, units, fixedBytes, fixedElements, error))
    return false;
  uint64_t elements = fixedElements, minBytes = fixedBytes;
  for (const Unit &u : units) {
    elements += u.elements;
    minBytes += *std::min_element(u.bytes.begin(), u.bytes.end());
  }
  const double budgetBytesD =
      req.bpw.empty() ? std::floor(budgetValue) : std::floor(budgetValue * double(elements) / 8);
  const std::string budgetText = req.bpw.empty() ? "--max-weight-bytes " + req.maxWeightBytes
                                                 : "--bpw " + req.bpw;
  // Absurd budgets fail before any measurement.
  if (budgetBytesD < double(minBytes)) {
    error = budgetText + " is below the smallest possible model: " + std::to_string(minBytes) +
            " bytes (" + num(8.0 * double(minBytes) / double(elements), "%.4f") +
            " bits per weight, every matrix q3_0 and every norm f16, rows padded to whole "
            "blocks)";
    return false;
  }
  const uint64_t budget = uint64_t(std::min(budgetBytesD, 1.8e19));

  // 1. The f32 reference.
  auto t0 = std::chrono::steady_clock::now();
  for (const Unit &u : units)
    setUnit(u, 0);
  CalibrationKld scorer(store, *req.calib);
  if (!scorer.init(*ref, error))
    return false;
  log("precision auto: " + std::to_string(units.size()) + " weights, " +
      std::to_string(scorer.positions()) + " scored calibration positions; budget " +
      std::to_string(budget) + " bytes");

  // 2. Sensitivity: one weight in one format at a time.
  for (Unit &u : units) {
    std::string line = "  " + u.weight;
    for (uint32_t f : u.formats) {
      double kld = 0;
      if (f != 0) {
        if (req.prepare && !req.prepare(u.weight, f, error))
          return false;
        setUnit(u, f);
        bool ok = scorer.kld(*ref, kld, error);
        setUnit(u, 0);
        if (!ok)
          return false;
      }
      u.kld.push_back(kld);
      line += " " + precision::formatName(f) + "=" + num(kld, "%.3g");
    }
    log(line);
    std::string effects;
    for (size_t i = 0; i < u.formats.size(); ++i)
      effects += (i ? "," : "") + std::string("kld_") + precision::formatName(u.formats[i]) +
                 "=" + num(u.kld[i], "%.4g") + ",bytes_" +
                 precision::formatName(u.formats[i]) + "=" + std::to_string(u.bytes[i]);
    records.push_back({"precision-sensitivity", "weight=" + u.weight + ",class=" + u.cls,
                       effects});
  }

  // 3. The choice under the budget (the fixed bytes are not the search's to spend).
  std::vector<KnapsackItem> items;
  for (const Unit &u : units)
    items.push_back({u.bytes, u.kld});
  std::vector<size_t> choice;
  const uint64_t free = budget - fixedBytes;
  if (!solveKnapsack(items, free, knapsackUnit(free, 1u << 18), choice, error))
    return false;
  std::map<std::string, uint32_t> map;
  std::map<std::string, int> counts;
  uint64_t bytes = fixedBytes;
  double predicted = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const Unit &u = units[i];
    map[u.weight] = u.formats[choice[i]];
    bytes += u.bytes[choice[i]];
    predicted += u.kld[choice[i]];
    counts[precision::formatName(u.formats[choice[i]])]++;
    setUnit(u, u.formats[choice[i]]);
  }

  // 4. What the chosen map really costs on the calibration text.
  double measured = 0;
  if (!scorer.kld(*ref, measured, error))
    return false;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string mix;
  for (const auto &[name, n] : counts)
    mix += (mix.empty() ? "" : "+") + std::to_string(n) + "x" + name;
  const std::string bpwText = num(8.0 * double(bytes) / double(elements), "%.4f");
  log("precision auto: " + std::to_string(bytes) + " weight bytes (" + bpwText +
      " bits per weight; " + mix + "), predicted KLD " + num(predicted, "%.6f") +
      ", measured KLD " + num(measured, "%.6f") + ", " + num(seconds, "%.1f") + " s");
  log("precision auto: the map, to replay without a search: --precision map:" +
      precision::printMap(map));
  records.push_back(
      {"precision-auto",
       "calib=" + req.calib->name + ",ctx=" + std::to_string(req.calib->ctx) +
           ",positions=" + std::to_string(scorer.positions()) + "," +
           (req.bpw.empty() ? "max_weight_bytes=" + req.maxWeightBytes : "bpw=" + req.bpw) +
           ",budget_bytes=" + std::to_string(budget) + ",rounding=" + req.rounding,
       "weight_bytes=" + std::to_string(bytes) + ",bpw=" + bpwText + ",mix=" + mix +
           ",predicted_kld=" + num(predicted, "%.6f") + ",measured_kld=" +
           num(measured, "%.6f")});
  out.weightFormat = "f32";
  out.precisionRules.clear();
  out.precisionMap = precision::printMap(map);
  return true;
}

} // namespace

bool resolvePrecision(ModuleOp module, const WeightStore &store, const PrecisionRequest &req,
                      KilnPipelineOptions &out, std::vector<AppliedPass> &records,
                      std::string &error) {
  const std::string &spec = req.spec;
  if (spec != "auto" && (!req.bpw.empty() || !req.maxWeightBytes.empty())) {
    error = "--bpw and --max-weight-bytes are budgets of --precision auto";
    return false;
  }
  if (spec.rfind("uniform:", 0) == 0) {
    uint32_t id;
    if (!precision::parseFormat(spec.substr(8), id)) {
      error = "unknown format '" + spec.substr(8) + "' in --precision (expected " +
              precision::formatList() + ")";
      return false;
    }
    out.weightFormat = precision::formatName(id);
    return true;
  }
  if (spec.rfind("rules:", 0) == 0) {
    precision::Rules rules;
    if (!precision::parseRules(spec.substr(6), rules, error)) {
      error = "--precision: " + error;
      return false;
    }
    out.precisionRules = spec.substr(6);
    return true;
  }
  if (spec.rfind("map:", 0) == 0) {
    // An explicit map, e.g. auto's printed one replayed without a search; weights it does
    // not name stay f32. Names no op reads fail in kiln-apply-precision-map.
    std::map<std::string, uint32_t> map;
    if (!precision::parseMap(spec.substr(4), map, error)) {
      error = "--precision: " + error;
      return false;
    }
    if (map.empty()) {
      error = "--precision map: names no weight (expected map:WEIGHT=FMT,...)";
      return false;
    }
    out.weightFormat = "f32";
    out.precisionMap = precision::printMap(map);
    return true;
  }
  if (spec == "source" || spec == "lossless") {
    out.weightFormat = spec;
    return true;
  }
  if (spec == "auto")
    return resolveAuto(module, store, req, out, records, error);
  error = "unknown --precision '" + spec +
          "' (expected source, lossless, uniform:FMT, rules:CLASS=FMT,..., map:WEIGHT=FMT,... or "
          "auto)";
  return false;
}

} // namespace kiln::pipelines
