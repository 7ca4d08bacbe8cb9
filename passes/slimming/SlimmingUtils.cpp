//===- SlimmingUtils.cpp - what the slimming passes share ------------------===//
#include "passes/slimming/SlimmingUtils.h"

#include <set>

#include "mlir/IR/Builders.h"

#include "dialects/kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln::slimming {

void recordPassEffects(ModuleOp module, StringRef pass, StringRef effects) {
  Builder b(module.getContext());
  NamedAttrList entries;
  if (auto old = module->getAttrOfType<DictionaryAttr>(kPassEffectsAttr))
    entries.append(old.getValue());
  entries.set(b.getStringAttr(pass), b.getStringAttr(effects));
  module->setAttr(kPassEffectsAttr, entries.getDictionary(module.getContext()));
}

std::string passEffects(ModuleOp module, StringRef pass) {
  if (auto all = module->getAttrOfType<DictionaryAttr>(kPassEffectsAttr))
    if (auto s = all.getAs<StringAttr>(pass))
      return s.str();
  return "";
}

std::optional<int32_t> layerOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(kLayerAttr))
    return int32_t(a.getInt());
  return std::nullopt;
}

std::map<int32_t, std::vector<Operation *>> opsByLayer(func::FuncOp forward) {
  std::map<int32_t, std::vector<Operation *>> layers;
  forward.walk([&](Operation *op) {
    if (auto l = layerOf(op))
      layers[*l].push_back(op);
  });
  return layers;
}

int64_t features(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getDimSize(t.getRank() - 1);
}

uint64_t parameterCount(Operation *op) {
  if (isa<LinearOp, LogitsOp>(op))
    return uint64_t(features(op->getOperand(0))) * uint64_t(features(op->getResult(0)));
  if (auto f = dyn_cast<FusedLinearOp>(op)) {
    // Stacked weight: every result's rows, gate and up both for SwiGLU.
    uint64_t rows = 0;
    for (Value r : f->getResults())
      rows += uint64_t(features(r));
    return uint64_t(features(f.getInput())) * (f.getSwiglu() ? 2 * rows : rows);
  }
  if (isa<RmsNormOp>(op))
    return uint64_t(features(op->getResult(0)));
  return 0;
}

uint64_t kvBytesPerToken(Operation *root) {
  uint64_t bytes = 0;
  root->walk([&](AttentionOp a) { bytes += 2 * uint64_t(features(a.getK())) * 4; });
  return bytes;
}

uint64_t ropeTableBytes(Operation *root, uint64_t positions) {
  std::set<std::pair<float, int32_t>> tables;
  root->walk([&](RopeOp r) {
    tables.insert({r.getTheta().convertToFloat(), int32_t(r.getRotaryDims())});
  });
  uint64_t bytes = 0;
  for (const auto &t : tables)
    bytes += 2 * uint64_t(t.second / 2) * positions * 4;
  return bytes;
}

std::string joinList(const std::vector<int64_t> &values) {
  std::string s;
  for (int64_t v : values)
    s += (s.empty() ? "" : "+") + std::to_string(v);
  return s;
}

} // namespace kiln::slimming
