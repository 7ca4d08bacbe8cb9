#include "models/llama/LlamaBuilder.h"

#include <cmath>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "dialects/kiln/IR/KilnAttrNames.h"
#include "dialects/kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln::llama {

namespace {

class Builder {
public:
  Builder(MLIRContext &ctx, const LlamaConfig &c, const WeightStore &w)
      : ctx(ctx), b(&ctx), c(c), weights(w) {}

  OwningOpRef<ModuleOp> build(std::string &error);

private:
  RankedTensorType act(int64_t features) {
    return RankedTensorType::get({ShapedType::kDynamic, features}, b.getF32Type());
  }
  // Storage format of a stored weight; records the first missing name.
  StorageFormat format(const std::string &name) {
    const WeightView *w = weights.find(name);
    if (!w) {
      if (missing.empty())
        missing = name;
      return StorageFormat::f32;
    }
    auto f = symbolizeStorageFormat(w->format);
    if (!f && missing.empty())
      missing = name + " (format " + std::to_string(w->format) + ")";
    return f.value_or(StorageFormat::f32);
  }
  Value linear(Value x, const std::string &name, int64_t out) {
    return b.create<LinearOp>(loc(name), act(out), x, b.getStringAttr(name),
                              StorageFormatAttr::get(&ctx, format(name)), StringAttr());
  }
  Value rmsNorm(Value x, const std::string &name) {
    return b.create<RmsNormOp>(loc(name), x.getType(), x, b.getStringAttr(name),
                               b.getF32FloatAttr(c.rmsEps), StorageFormatAttr());
  }
  Value rope(Value x, Value positions) {
    auto style = c.ropePairing == RopePairing::Adjacent ? RopeStyle::adjacent
                                                         : RopeStyle::rotate_half;
    return b.create<RopeOp>(b.getUnknownLoc(), x.getType(), x, positions,
                            b.getI32IntegerAttr(int32_t(c.headDim)),
                            b.getI32IntegerAttr(int32_t(c.ropeDims)),
                            b.getF32FloatAttr(c.ropeTheta), RopeStyleAttr::get(&ctx, style),
                            c.ropeFreqFactors.empty()
                                ? DenseF32ArrayAttr()
                                : b.getDenseF32ArrayAttr(c.ropeFreqFactors));
  }
  Location loc(const std::string &name) { return NameLoc::get(b.getStringAttr(name)); }
  Value decoderLayer(uint32_t l, Value x, Value positions);

  MLIRContext &ctx;
  OpBuilder b;
  const LlamaConfig &c;
  const WeightStore &weights;
  std::string missing;
};

Value Builder::decoderLayer(uint32_t l, Value x, Value positions) {
  const int64_t dim = c.dim, kvDim = int64_t(c.numKvHeads) * c.headDim;
  auto t = [&](const char *s) { return layerTensor(l, s); };

  Value h = rmsNorm(x, t("attn_norm.weight"));
  Value q = rope(linear(h, t("attn_q.weight"), dim), positions);
  Value k = rope(linear(h, t("attn_k.weight"), kvDim), positions);
  Value v = linear(h, t("attn_v.weight"), kvDim);
  auto i32 = [&](uint32_t v) { return b.getI32IntegerAttr(int32_t(v)); };
  Value a = b.create<AttentionOp>(loc(t("attn")), act(dim), q, k, v, positions, i32(l),
                                  i32(c.numHeads), i32(c.numKvHeads), i32(c.headDim),
                                  b.getF32FloatAttr(1.0f / std::sqrt(float(c.headDim))),
                                  DenseI32ArrayAttr());
  x = b.create<AddOp>(b.getUnknownLoc(), x, linear(a, t("attn_output.weight"), dim));

  h = rmsNorm(x, t("ffn_norm.weight"));
  Value gate = b.create<SiluOp>(b.getUnknownLoc(), linear(h, t("ffn_gate.weight"), c.ffnDim));
  Value up = linear(h, t("ffn_up.weight"), c.ffnDim);
  Value ffn = b.create<MulOp>(b.getUnknownLoc(), gate, up);
  return b.create<AddOp>(b.getUnknownLoc(), x, linear(ffn, t("ffn_down.weight"), dim));
}

OwningOpRef<ModuleOp> Builder::build(std::string &error) {
  ctx.getOrLoadDialect<KilnDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  auto i32 = [&](uint32_t v) { return b.getI32IntegerAttr(int32_t(v)); };
  module->getOperation()->setAttr(attr::kArch, b.getStringAttr("llama"));
  module->getOperation()->setAttr(attr::kVocabSize, i32(c.vocabSize));
  module->getOperation()->setAttr(attr::kNumLayers, i32(c.numLayers));
  module->getOperation()->setAttr(attr::kContextLength, i32(c.contextLength));

  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  auto fnType = b.getFunctionType({ids, ids}, {act(c.vocabSize)});
  b.setInsertionPointToEnd(module->getBody());
  auto fn = b.create<func::FuncOp>(b.getUnknownLoc(), "forward", fnType);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value tokens = entry->getArgument(0), positions = entry->getArgument(1);

  Value x = b.create<EmbedOp>(loc("token_embd.weight"), act(c.dim), tokens,
                              b.getStringAttr("token_embd.weight"),
                              StorageFormatAttr::get(&ctx, format("token_embd.weight")));
  for (uint32_t l = 0; l < c.numLayers; ++l) {
    Operation *before = x.getDefiningOp();
    x = decoderLayer(l, x, positions);
    // Every op of decoder layer l carries kiln.layer = l, so analyses and slimming passes
    // can find a layer's ops without pattern-matching the residual stream.
    for (Operation *op = before->getNextNode(); op; op = op->getNextNode())
      op->setAttr(attr::kLayer, b.getI32IntegerAttr(int32_t(l)));
  }
  x = rmsNorm(x, "output_norm.weight");
  std::string out = c.outputWeight();
  Value logits = b.create<LogitsOp>(loc(out), act(c.vocabSize), x, b.getStringAttr(out),
                                    StorageFormatAttr::get(&ctx, format(out)));
  b.create<func::ReturnOp>(b.getUnknownLoc(), logits);

  if (!missing.empty()) {
    error = "llama builder: weight '" + missing + "' is missing or in an unknown format";
    return nullptr;
  }
  if (failed(module->verify())) {
    error = "llama builder produced IR that does not verify";
    return nullptr;
  }
  return module;
}

} // namespace

OwningOpRef<ModuleOp> buildLlama(MLIRContext &ctx, const LlamaConfig &config,
                                 const WeightStore &weights, std::string &error) {
  return Builder(ctx, config, weights).build(error);
}

} // namespace kiln::llama
