//===- CalibratedRounding.cpp - weights rounded with their inputs' statistics -===//
#include "compiler/pipelines/CalibratedRounding.h"

#include <chrono>

#include "mlir/IR/OwningOpRef.h"

#include "compiler/eval/RefExecutor.h"
#include "passes/precision/WeightReads.h"

using namespace mlir;

namespace kiln::pipelines {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

bool CalibratedRounding::collect(ModuleOp module, const WeightStore &store,
                                 const Calibration &calib, std::string &error) {
  const auto t0 = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> ref(module.clone());
  for (const precision::WeightRead &r : precision::weightReads(*ref))
    precision::setFormat(r.op, 0); // the statistics of the f32 model's activations
  auto exec = RefExecutor::create(*ref, store, calib.ctx, error);
  if (!exec)
    return false;
  size_t chunks = calib.tokens.size() / calib.ctx;
  if (calib.maxChunks && chunks > calib.maxChunks)
    chunks = calib.maxChunks;
  if (chunks == 0) {
    error = "the calibration text has no chunk of " + std::to_string(calib.ctx) + " tokens";
    return false;
  }
  exec->setInputObserver([&](const ObservedOp &op, const Matrix &x) {
    if (op.weight.empty())
      return;
    inputOf_[op.weight] = op.input;
    quant::InputStats &s = stats_[op.input];
    s.cols = uint64_t(x.cols());
    s.add(x.data(), uint64_t(x.rows()));
  });
  Matrix logits;
  for (size_t c = 0; c < chunks; ++c) {
    std::vector<int32_t> chunk(calib.tokens.begin() + long(c * calib.ctx),
                               calib.tokens.begin() + long((c + 1) * calib.ctx));
    chunk[0] = calib.bos;
    exec->resetCache();
    if (!exec->forward(chunk, 0, logits, error))
      return false;
    positions_ += chunk.size();
  }
  statsSeconds_ += since(t0);
  return true;
}

bool CalibratedRounding::encode(WeightStore &store, const std::string &name, uint32_t format,
                                std::string &error) {
  if (method_ == quant::Rounding::Nearest || !quant::hasCalibratedEncoder(format) ||
      store.encoding(name, format))
    return true;
  const auto t0 = std::chrono::steady_clock::now();
  const WeightView *w = store.find(name);
  if (!w) {
    error = "weight '" + name + "' is not in the weight store";
    return false;
  }
  if (w->format == format)
    return true; // stored in that format already: kept byte for byte, not rounded twice
  std::vector<float> values;
  if (!store.dequantize(name, values, error))
    return false;
  const quant::InputStats *stats = nullptr;
  int32_t input = -1; // no input: identity importance
  if (auto it = inputOf_.find(name); it != inputOf_.end())
    input = it->second, stats = &stats_.at(input);
  auto [plan, fresh] = plans_.try_emplace({input, w->rowLength()});
  if (fresh &&
      !quant::RoundingPlan::make(method_, stats, w->rowLength(), plan->second, error)) {
    plans_.erase(plan);
    error = "weight '" + name + "': " + error;
    return false;
  }
  WeightEncoding enc;
  enc.format = format;
  enc.method = quant::roundingName(method_);
  if (!quant::encodeCalibrated(format, plan->second, values.data(), w->numRows(),
                               w->rowLength(), enc.bytes, enc.paddedRowLength, error)) {
    error = "weight '" + name + "': " + error;
    return false;
  }
  store.setEncoding(name, std::move(enc));
  encodeSeconds_ += since(t0);
  return true;
}

bool CalibratedRounding::encodeModule(ModuleOp module, WeightStore &store, size_t &count,
                                      std::string &error) {
  count = 0;
  std::map<std::string, uint32_t> done;
  for (const precision::WeightRead &r : precision::weightReads(module)) {
    const uint32_t format = precision::formatOf(r.op);
    if (r.kind == "rms_norm" || !quant::hasCalibratedEncoder(format) ||
        !done.emplace(r.weight, format).second)
      continue;
    if (!encode(store, r.weight, format, error))
      return false;
    count += store.encoding(r.weight, format) != nullptr;
  }
  return true;
}

} // namespace kiln::pipelines
