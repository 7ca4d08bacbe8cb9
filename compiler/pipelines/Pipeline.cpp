#include "compiler/pipelines/Pipeline.h"

#include <algorithm>
#include <cstdio>

#include "codegen/common/LoweringWeights.h"
#include "compiler/pipelines/CalibratedRounding.h"
#include "compiler/pipelines/CalibrationKld.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "models/weights/DerivedWeights.h"
#include "passes/precision/WeightReads.h"

namespace kiln::pipelines {

namespace {

void log(const PipelineRequest &req, const std::string &line) {
  if (req.slimming.log)
    req.slimming.log(line);
}

// Slimming, then compensation measured on the slimmed module; the result is recorded
// before fusion, which also removes parameters (folded norm scales) that slimming did not.
bool slim(mlir::ModuleOp module, WeightStore &store, const PipelineRequest &req,
          std::vector<AppliedPass> &records, std::string &error) {
  KilnPipelineOptions po;
  SlimmingPlan plan;
  return resolveSlimming(module, store, req.slimming, po, plan, records, error) &&
         runSlimmingPasses(module, po, records, error) &&
         materializeDerivedWeights(module, store, error) &&
         compensateSlimming(module, store, req.slimming, po, plan, records, error) &&
         materializeDerivedWeights(module, store, error) &&
         recordSlimmingResult(module, store, req.slimming, plan, records, error);
}

// Precision after slimming (the search measures the slimmed model it will store), each
// weight encoded from the calibration inputs when a rounding other than nearest is asked
// (auto measures its candidates so encoded), then the fusions.
bool assignPrecisionAndFuse(mlir::ModuleOp module, WeightStore &store, PipelineRequest &req,
                            std::vector<AppliedPass> &records, std::string &error) {
  PrecisionRequest &preq = req.precision;
  preq.calib = req.calib;
  preq.log = req.slimming.log;
  // the bytes kiln compile's layout will store; r16's padding without one (eval, ppl)
  preq.packRows = req.layout == "r32" ? 32 : req.layout == "rows64" ? 0 : 16;
  preq.rowAlign = req.rowAlign;
  CalibratedRounding calibrated(req.rounding);
  const bool rounds = req.rounding != quant::Rounding::Nearest;
  if (rounds) {
    if (!calibrated.collect(module, store, *req.calib, error))
      return false;
    preq.prepare = [&](const std::string &weight, uint32_t format, std::string &err) {
      return calibrated.encode(store, weight, format, err);
    };
  }
  KilnPipelineOptions rest;
  if (!resolvePrecision(module, store, preq, rest, records, error))
    return false;
  rest.keepPackedKQuants = req.integerKQuants;
  if (!runPrecisionPasses(module, rest, records, error))
    return false;
  if (rounds) {
    size_t count = 0;
    if (!calibrated.encodeModule(module, store, count, error))
      return false;
    char secs[32], stats[32];
    std::snprintf(secs, sizeof secs, "%.1f", calibrated.encodeSeconds());
    std::snprintf(stats, sizeof stats, "%.1f", calibrated.statsSeconds());
    log(req, "rounding " + preq.rounding + ": " + std::to_string(count) +
                 " weights encoded from the inputs of " +
                 std::to_string(calibrated.positions()) +
                 " calibration positions (statistics " + stats + " s, encoding " + secs +
                 " s)");
    records.push_back({"calibrated-rounding",
                       "method=" + preq.rounding + ",calib=" + req.calib->name +
                           ",ctx=" + std::to_string(req.calib->ctx) +
                           ",positions=" + std::to_string(calibrated.positions()),
                       // no times: the same inputs give the same artifact bytes
                       "weights=" + std::to_string(count)});
  }
  preq.prepare = nullptr; // it points at `calibrated`, which ends here
  rest.fusion = req.fusion;
  rest.layout = req.layout;
  return runFusionPasses(module, rest, records, error);
}

// --rotate auto: the precision (its rounding and the fusions too) on a rotated copy and on
// the module itself, each scored by its calibration KLD against the f32 model (the same
// model both ways: the rotation is exact); the module keeps the lower, the record says both.
bool precisionWithRotationChoice(mlir::ModuleOp module, WeightStore &store,
                                 PipelineRequest &req, std::vector<AppliedPass> &records,
                                 std::string &error) {
  if (!req.calib || req.precision.spec.empty()) {
    error = "--rotate auto needs --calib TEXT and --precision";
    return false;
  }
  mlir::OwningOpRef<mlir::ModuleOp> ref(module.clone());
  for (const precision::WeightRead &r : precision::weightReads(*ref))
    precision::setFormat(r.op, 0);
  CalibrationKld scorer(store, *req.calib);
  if (!scorer.init(*ref, error))
    return false;
  mlir::OwningOpRef<mlir::ModuleOp> rotated(module.clone());
  std::vector<AppliedPass> rotatedRecords = records;
  double kldRotated = 0, kldPlain = 0;
  if (!runResidualRotation(*rotated, rotatedRecords, error) ||
      !materializeDerivedWeights(*rotated, store, error) ||
      !assignPrecisionAndFuse(*rotated, store, req, rotatedRecords, error) ||
      !materializeDerivedWeights(*rotated, store, error) ||
      !scorer.kld(*rotated, kldRotated, error))
    return false;
  if (!assignPrecisionAndFuse(module, store, req, records, error) ||
      !materializeDerivedWeights(module, store, error) || !scorer.kld(module, kldPlain, error))
    return false;
  const bool rotate = kldRotated < kldPlain;
  if (rotate) {
    mlir::Block *body = module.getBody();
    body->getOperations().clear();
    body->getOperations().splice(body->end(), rotated->getBody()->getOperations());
    module->setAttrs(rotated.get()->getAttrDictionary());
    records = std::move(rotatedRecords);
  }
  char plain[32], rot[32];
  std::snprintf(plain, sizeof plain, "%.6f", kldPlain);
  std::snprintf(rot, sizeof rot, "%.6f", kldRotated);
  log(req, std::string("rotation auto: calibration KLD ") + plain + " unrotated, " + rot +
               " rotated: " + (rotate ? "rotated" : "not rotated"));
  records.push_back({"rotation-choice",
                     "calib=" + req.calib->name + ",ctx=" + std::to_string(req.calib->ctx) +
                         ",positions=" + std::to_string(scorer.positions()),
                     std::string("kld_none=") + plain + ",kld_residual=" + rot +
                         ",chose=" + (rotate ? "residual" : "none")});
  return true;
}

// The back half's context: the one asked for, or kiln-prune-context's cap (--max-ctx),
// which sizes the same tables; prefill batches up to 128 tokens by default.
bool sizeContext(mlir::ModuleOp module, BackHalfOptions &back, std::string &error) {
  if (auto cap = module->getAttrOfType<mlir::IntegerAttr>(attr::kMaxCtx))
    back.maxCtx = uint32_t(cap.getInt());
  back.maxBatch = back.maxBatch ? back.maxBatch : std::min(128u, back.maxCtx);
  if (back.maxBatch > back.maxCtx) {
    error = "--max-batch " + std::to_string(back.maxBatch) + " exceeds the context " +
            std::to_string(back.maxCtx);
    return false;
  }
  return true;
}

} // namespace

bool runPipeline(mlir::ModuleOp module, WeightStore &store, PipelineRequest &req,
                 Stage stopAfter, std::vector<AppliedPass> &records, std::string &error) {
  if (req.stageBegins)
    req.stageBegins("slimming, precision, fusion");
  if (!slim(module, store, req, records, error))
    return false;
  if (req.rotate == Rotate::Residual && (!runResidualRotation(module, records, error) ||
                                         !materializeDerivedWeights(module, store, error)))
    return false;
  if (req.rotate == Rotate::Auto) {
    if (!precisionWithRotationChoice(module, store, req, records, error))
      return false;
  } else if (!req.precision.spec.empty()) {
    if (!assignPrecisionAndFuse(module, store, req, records, error))
      return false;
  } else if (!req.precision.bpw.empty() || !req.precision.maxWeightBytes.empty()) {
    error = "--bpw and --max-weight-bytes are budgets of --precision auto";
    return false;
  }
  if (stopAfter == Stage::Fused)
    return materializeDerivedWeights(module, store, error);
  if (!sizeContext(module, req.back, error))
    return false;
  if (req.stageBegins)
    req.stageBegins("layout, memory plan, lowering");
  codegen::LoweringWeights &weights = *req.weights;
  weights.store = &store;
  weights.materialize = [module, &store](const std::string &name, std::string &err) {
    return materializeDerivedWeight(module, name, store, err);
  };
  weights.release = [&store](const std::string &name) { store.remove(name); };
  return runBackHalfPipeline(module, *req.target, req.back, weights,
                             stopAfter == Stage::Kiln ? BackHalfStage::Kiln
                                                      : BackHalfStage::Lowered,
                             records, error);
}

} // namespace kiln::pipelines
