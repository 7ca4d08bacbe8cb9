#include "compiler/analysis/ModelLayout.h"

#include <map>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include "compiler/eval/Perplexity.h"
#include "compiler/eval/RefExecutor.h"
#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln::analysis {

namespace {

int32_t layerOf(Operation *op) {
  auto layer = op ? op->getAttrOfType<IntegerAttr>(attr::kLayer) : nullptr;
  return layer ? int32_t(layer.getInt()) : -1;
}

// The projection writing a residual branch: a kiln.linear of the same layer.
LinearOp branchProjection(Value v, int32_t layer) {
  auto lin = v.getDefiningOp<LinearOp>();
  return lin && layerOf(lin) == layer ? lin : LinearOp();
}

// Reads `name` from `store` as fp32, lets `edit` change it, stores the result as owned.
template <typename Edit>
bool rewriteWeight(WeightStore &store, const std::string &name, Edit edit, std::string &error) {
  const WeightView *w = store.find(name);
  if (!w) {
    error = "weight '" + name + "' is not in the weight store";
    return false;
  }
  std::vector<uint64_t> dims = w->dims;
  const uint64_t rows = w->numRows(), cols = w->rowLength();
  std::vector<float> data;
  if (!store.dequantize(name, data, error))
    return false;
  if (!edit(data, rows, cols))
    return false;
  store.addOwnedF32(name, std::move(dims), std::move(data));
  return true;
}

} // namespace

bool findLayers(ModuleOp module, std::vector<LayerLayout> &layers, std::string &error) {
  layers.clear();
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.getBody().empty()) {
    error = "module has no @forward function";
    return false;
  }
  llvm::DenseMap<Operation *, uint32_t> index;
  uint32_t next = 0;
  for (Operation &op : fn.getBody().front())
    index[&op] = next++;

  std::map<int32_t, LayerLayout> byLayer;
  for (Operation &op : fn.getBody().front()) {
    const int32_t l = layerOf(&op);
    if (l < 0)
      continue;
    LayerLayout &layout = byLayer[l];
    layout.layer = l;
    const std::string where = "layer " + std::to_string(l) + ": ";
    if (auto add = dyn_cast<AddOp>(op)) {
      Value stream = add.getLhs(), branch = add.getRhs();
      LinearOp proj = branchProjection(branch, l);
      if (!proj) {
        std::swap(stream, branch);
        proj = branchProjection(branch, l);
      }
      if (!proj) {
        error = where + "kiln.add is not a residual add of a projection";
        return false;
      }
      Operation *streamDef = stream.getDefiningOp();
      if (!streamDef) {
        error = where + "the residual stream is not produced by an op";
        return false;
      }
      if (layout.branches.empty())
        layout.inputOp = index.lookup(streamDef);
      layout.outputOp = index.lookup(&op);
      layout.branches.push_back(
          {index.lookup(&op), index.lookup(proj.getOperation()), proj.getWeight().str()});
      continue;
    }
    if (auto attn = dyn_cast<AttentionOp>(op)) {
      if (layout.attentionOp >= 0) {
        error = where + "has two kiln.attention ops";
        return false;
      }
      layout.attentionOp = index.lookup(&op);
      layout.heads = int32_t(attn.getNumHeads());
      layout.kvHeads = int32_t(attn.getNumKvHeads());
      layout.headDim = int32_t(attn.getHeadDim());
      layout.kvHeadOf.clear();
      for (int32_t h = 0; h < layout.heads; ++h)
        layout.kvHeadOf.push_back(attn.getKvHeadMap() ? (*attn.getKvHeadMap())[size_t(h)]
                                                      : h / (layout.heads / layout.kvHeads));
      for (Operation *user : attn->getUsers())
        if (auto lin = dyn_cast<LinearOp>(user))
          layout.attnOutWeight = lin.getWeight().str();
      if (layout.attnOutWeight.empty()) {
        error = where + "no kiln.linear reads the attention result";
        return false;
      }
    }
  }
  for (auto &[l, layout] : byLayer) {
    if (layout.branches.empty()) {
      error = "layer " + std::to_string(l) + " has no residual add";
      return false;
    }
    layers.push_back(std::move(layout));
  }
  if (layers.empty()) {
    error = "no op of @forward carries kiln.layer (not a decoder-layer model?)";
    return false;
  }
  return true;
}

WeightStore overlayOf(const WeightStore &base) {
  WeightStore overlay;
  for (const auto &[name, view] : base.all())
    overlay.add(view);
  return overlay;
}

bool scaleBranches(WeightStore &overlay, const LayerLayout &layer, double gain,
                   std::string &error) {
  for (const ResidualBranch &b : layer.branches) {
    bool ok = rewriteWeight(
        overlay, b.weight,
        [&](std::vector<float> &w, uint64_t, uint64_t) {
          for (float &x : w)
            x = float(double(x) * gain);
          return true;
        },
        error);
    if (!ok)
      return false;
  }
  return true;
}

bool zeroHead(WeightStore &overlay, const LayerLayout &layer, int32_t head, std::string &error) {
  if (head < 0 || head >= layer.heads) {
    error = "layer " + std::to_string(layer.layer) + " has no query head " + std::to_string(head);
    return false;
  }
  return rewriteWeight(
      overlay, layer.attnOutWeight,
      [&](std::vector<float> &w, uint64_t rows, uint64_t cols) {
        const uint64_t d = uint64_t(layer.headDim);
        if (cols != uint64_t(layer.heads) * d) {
          error = "weight '" + layer.attnOutWeight + "' has " + std::to_string(cols) +
                  " columns, not heads x head_dim = " + std::to_string(layer.heads * d);
          return false;
        }
        for (uint64_t r = 0; r < rows; ++r)
          std::fill_n(w.begin() + long(r * cols + uint64_t(head) * d), d, 0.0f);
        return true;
      },
      error);
}

bool calibrationNll(ModuleOp module, const WeightStore &store, const CalibrationSet &calib,
                    double &meanNll, std::string &error) {
  auto exec = RefExecutor::create(module, store, calib.ctx, error);
  if (!exec)
    return false;
  PerplexityResult r;
  if (!perplexity(*exec, nullptr, calib.tokens, calib.bos, calib.ctx, calib.maxChunks, r, error))
    return false;
  meanNll = r.meanNll;
  return true;
}

} // namespace kiln::analysis
