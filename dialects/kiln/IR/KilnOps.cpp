//===- KilnOps.cpp - kiln op verifiers ------------------------------------===//
//
// Verifiers reject IR whose shapes cannot describe a Llama-family decoder: every
// activation is rank 2 [tokens, features] with static features, token counts agree where
// they are both static, and head counts divide the feature widths.
//===----------------------------------------------------------------------===//
#include "dialects/kiln/IR/KilnOps.h"

#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include "kiln/quant.h"

using namespace mlir;
using namespace kiln;

#include "dialects/kiln/IR/KilnEnums.cpp.inc"

namespace {

// Checks an activation is [tokens, features] with a static, positive feature count.
LogicalResult checkActivation(Operation *op, Type type, StringRef what) {
  auto t = cast<RankedTensorType>(type);
  if (t.getRank() != 2)
    return op->emitOpError() << what << " must be rank 2 [tokens, features], got " << t;
  if (t.isDynamicDim(1) || t.getDimSize(1) <= 0)
    return op->emitOpError() << what << " must have a static positive feature dimension, got "
                             << t;
  return success();
}

LogicalResult checkTokenVector(Operation *op, Type type, StringRef what) {
  auto t = cast<RankedTensorType>(type);
  if (t.getRank() != 1)
    return op->emitOpError() << what << " must be rank 1 [tokens], got " << t;
  return success();
}

// Token (row) counts must agree unless one side is dynamic.
LogicalResult checkSameTokens(Operation *op, Type a, Type b, StringRef whatA,
                              StringRef whatB) {
  int64_t ta = cast<RankedTensorType>(a).getDimSize(0);
  int64_t tb = cast<RankedTensorType>(b).getDimSize(0);
  if (!ShapedType::isDynamic(ta) && !ShapedType::isDynamic(tb) && ta != tb)
    return op->emitOpError() << whatA << " has " << ta << " tokens but " << whatB << " has "
                             << tb;
  return success();
}

int64_t features(Type t) { return cast<RankedTensorType>(t).getDimSize(1); }

LogicalResult checkWeightName(Operation *op, StringRef name) {
  if (name.empty())
    return op->emitOpError("weight name must not be empty");
  return success();
}

// Shared by linear and logits: rank-2 in/out with matching token counts.
LogicalResult verifyProjection(Operation *op, Type in, Type out, StringRef weight) {
  if (failed(checkWeightName(op, weight)) || failed(checkActivation(op, in, "input")) ||
      failed(checkActivation(op, out, "result")) ||
      failed(checkSameTokens(op, in, out, "input", "result")))
    return failure();
  return success();
}

} // namespace

LogicalResult EmbedOp::verify() {
  if (failed(checkWeightName(*this, getWeight())) ||
      failed(checkTokenVector(*this, getTokens().getType(), "tokens")) ||
      failed(checkActivation(*this, getType(), "result")))
    return failure();
  int64_t n = getTokens().getType().getDimSize(0);
  int64_t m = getType().getDimSize(0);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(m) && n != m)
    return emitOpError() << "has " << n << " token ids but " << m << " result rows";
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (failed(checkWeightName(*this, getWeight())) ||
      failed(checkActivation(*this, getType(), "input")))
    return failure();
  float eps = getEps().convertToFloat();
  if (!(eps > 0.0f) || eps > 1.0f)
    return emitOpError() << "eps must be in (0, 1], got " << eps;
  // The norm kernels read an f32 or f16 scale only.
  if (auto f = getFormat(); f && *f != StorageFormat::f32 && *f != StorageFormat::f16)
    return emitOpError() << "format must be f32 or f16, got " << stringifyStorageFormat(*f);
  return success();
}

LogicalResult LinearOp::verify() {
  if (failed(verifyProjection(*this, getInput().getType(), getType(), getWeight())))
    return failure();
  if (auto bias = getBias(); bias && bias->empty())
    return emitOpError("bias name must not be empty");
  return success();
}

LogicalResult LogitsOp::verify() {
  return verifyProjection(*this, getInput().getType(), getType(), getWeight());
}

// One finite, positive factor per rotated pair (llama.cpp divides the angle by it).
static LogicalResult checkFreqFactors(Operation *op, std::optional<ArrayRef<float>> factors,
                                      int64_t rotaryDims) {
  if (!factors)
    return success();
  if (int64_t(factors->size()) != rotaryDims / 2)
    return op->emitOpError() << "has " << factors->size() << " freq_factors for "
                             << rotaryDims / 2 << " rotated pairs";
  for (float f : *factors)
    if (!(f > 0.0f) || !std::isfinite(f))
      return op->emitOpError() << "freq_factors must be finite and positive, got " << f;
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(checkActivation(*this, getType(), "input")) ||
      failed(checkTokenVector(*this, getPositions().getType(), "positions")) ||
      failed(checkSameTokens(*this, getInput().getType(), getPositions().getType(), "input",
                             "positions")))
    return failure();
  int64_t width = features(getType());
  int64_t headDim = getHeadDimAttr().getInt(), rot = getRotaryDimsAttr().getInt();
  if (headDim <= 0 || width % headDim != 0)
    return emitOpError() << "head_dim " << headDim << " must be positive and divide the "
                         << width << " features";
  if (rot <= 0 || rot > headDim || rot % 2 != 0)
    return emitOpError() << "rotary_dims " << rot
                         << " must be even and in [2, head_dim = " << headDim << "]";
  if (!(getTheta().convertToFloat() > 0.0f))
    return emitOpError("theta must be positive");
  return checkFreqFactors(*this, getFreqFactors(), rot);
}

LogicalResult AttentionOp::verify() {
  Type qt = getQ().getType(), kt = getK().getType();
  if (failed(checkActivation(*this, qt, "q")) || failed(checkActivation(*this, kt, "k")) ||
      failed(checkActivation(*this, getType(), "result")) ||
      failed(checkTokenVector(*this, getPositions().getType(), "positions")) ||
      failed(checkSameTokens(*this, qt, kt, "q", "k")) ||
      failed(checkSameTokens(*this, qt, getPositions().getType(), "q", "positions")) ||
      failed(checkSameTokens(*this, qt, getType(), "q", "result")))
    return failure();
  // I32Attr getters are unsigned; read the signed value so negatives are caught.
  int64_t heads = getNumHeadsAttr().getInt(), kvHeads = getNumKvHeadsAttr().getInt(),
          headDim = getHeadDimAttr().getInt();
  if (getLayerAttr().getInt() < 0)
    return emitOpError() << "layer must be non-negative, got " << getLayerAttr().getInt();
  if (heads <= 0 || kvHeads <= 0 || headDim <= 0)
    return emitOpError("heads, kv_heads and head_dim must be positive");
  if (features(qt) != int64_t(heads) * headDim)
    return emitOpError() << "q has " << features(qt) << " features but heads * head_dim = "
                         << heads * headDim;
  if (features(kt) != int64_t(kvHeads) * headDim)
    return emitOpError() << "k/v have " << features(kt)
                         << " features but kv_heads * head_dim = " << kvHeads * headDim;
  if (features(getType()) != features(qt))
    return emitOpError("result must have as many features as q");
  if (!(getScale().convertToFloat() > 0.0f))
    return emitOpError("scale must be positive");
  if (auto map = getKvHeadMap()) {
    if (int64_t(map->size()) != heads)
      return emitOpError() << "kv_head_map has " << map->size() << " entries for " << heads
                           << " heads";
    for (int32_t g : *map)
      if (g < 0 || g >= kvHeads)
        return emitOpError() << "kv_head_map entry " << g << " is not a KV head in [0, "
                             << kvHeads << ")";
  } else if (heads % kvHeads != 0) {
    return emitOpError() << "heads (" << heads << ") must be a multiple of kv_heads ("
                         << kvHeads << ") unless kv_head_map is given";
  }
  const int present = int(bool(getRopeRotaryDimsAttr())) + int(bool(getRopeThetaAttr())) +
                      int(bool(getRopeStyleAttr()));
  if (present != 0 && present != 3)
    return emitOpError("rope_rotary_dims, rope_theta and rope_style go together");
  if (present == 3) {
    int64_t rot = getRopeRotaryDimsAttr().getInt();
    if (rot <= 0 || rot > headDim || rot % 2 != 0)
      return emitOpError() << "rope rotary_dims " << rot
                           << " must be even and in [2, head_dim = " << headDim << "]";
    if (!(getRopeThetaAttr().getValueAsDouble() > 0.0))
      return emitOpError("rope theta must be positive");
    return checkFreqFactors(*this, getRopeFreqFactors(), rot);
  }
  if (getRopeFreqFactorsAttr())
    return emitOpError("rope_freq_factors needs the rope group");
  return success();
}

LogicalResult SiluOp::verify() { return checkActivation(*this, getType(), "input"); }
LogicalResult MulOp::verify() { return checkActivation(*this, getType(), "operands"); }
LogicalResult AddOp::verify() { return checkActivation(*this, getType(), "operands"); }

#define GET_OP_CLASSES
#include "dialects/kiln/IR/KilnOps.cpp.inc"

LogicalResult RmsNormalizeOp::verify() {
  if (failed(checkActivation(*this, getType(), "input")))
    return failure();
  float eps = getEps().convertToFloat();
  if (!(eps > 0.0f) || eps > 1.0f)
    return emitOpError() << "eps must be in (0, 1], got " << eps;
  return success();
}

LogicalResult FusedLinearOp::verify() {
  if (failed(checkWeightName(*this, getWeight())) ||
      failed(checkActivation(*this, getInput().getType(), "input")))
    return failure();
  // The micro-kernel writes at most three output segments (q, k, v).
  if (getNumResults() < 1 || getNumResults() > 3)
    return emitOpError() << "must have 1 to 3 results, got " << getNumResults();
  for (Value r : getResults())
    if (failed(checkActivation(*this, r.getType(), "result")) ||
        failed(checkSameTokens(*this, getInput().getType(), r.getType(), "input", "result")))
      return failure();
  if ((getSwiglu() || getResidual()) && getNumResults() != 1)
    return emitOpError("with swiglu or a residual must have exactly one result");
  if (getSwiglu() && getResidual())
    return emitOpError("cannot have both swiglu and a residual");
  if (getResidual() && getResidual().getType() != getResult(0).getType())
    return emitOpError() << "residual type " << getResidual().getType()
                         << " differs from the result type " << getResult(0).getType();
  return success();
}

//===----------------------------------------------------------------------===//
// WeightReaderOpInterface
//===----------------------------------------------------------------------===//

#include "dialects/kiln/IR/KilnInterfaces.cpp.inc"

SmallVector<WeightRead, 2> kiln::weightReadsOf(Operation *op) {
  SmallVector<WeightRead, 2> reads;
  if (auto reader = dyn_cast<WeightReaderOpInterface>(op))
    reader.getWeightReads(reads);
  return reads;
}

// The storage-format enum is the ggml type ids of kiln/quant.h, value for value: the
// lowering passes the enum's value to the kernels as their format argument.
static_assert(uint32_t(StorageFormat::f32) == KILN_GGML_TYPE_F32);
static_assert(uint32_t(StorageFormat::f16) == KILN_GGML_TYPE_F16);
static_assert(uint32_t(StorageFormat::q4_0) == KILN_GGML_TYPE_Q4_0);
static_assert(uint32_t(StorageFormat::q4_1) == KILN_GGML_TYPE_Q4_1);
static_assert(uint32_t(StorageFormat::q5_0) == KILN_GGML_TYPE_Q5_0);
static_assert(uint32_t(StorageFormat::q5_1) == KILN_GGML_TYPE_Q5_1);
static_assert(uint32_t(StorageFormat::q8_0) == KILN_GGML_TYPE_Q8_0);
static_assert(uint32_t(StorageFormat::q2_k) == KILN_GGML_TYPE_Q2_K);
static_assert(uint32_t(StorageFormat::q3_k) == KILN_GGML_TYPE_Q3_K);
static_assert(uint32_t(StorageFormat::q4_k) == KILN_GGML_TYPE_Q4_K);
static_assert(uint32_t(StorageFormat::q5_k) == KILN_GGML_TYPE_Q5_K);
static_assert(uint32_t(StorageFormat::q6_k) == KILN_GGML_TYPE_Q6_K);
static_assert(uint32_t(StorageFormat::iq4_nl) == KILN_GGML_TYPE_IQ4_NL);
static_assert(uint32_t(StorageFormat::iq4_xs) == KILN_GGML_TYPE_IQ4_XS);
static_assert(uint32_t(StorageFormat::bf16) == KILN_GGML_TYPE_BF16);
static_assert(uint32_t(StorageFormat::q3_0) == KILN_TYPE_Q3_0);

void EmbedOp::getWeightReads(SmallVectorImpl<WeightRead> &reads) {
  reads.push_back({getWeight(), uint32_t(getFormat()), 0, features(getType()), false});
}

void RmsNormOp::getWeightReads(SmallVectorImpl<WeightRead> &reads) {
  const uint32_t format = getFormat() ? uint32_t(*getFormat()) : KILN_GGML_TYPE_F32;
  reads.push_back({getWeight(), format, 1, features(getType()), false});
}

void LinearOp::getWeightReads(SmallVectorImpl<WeightRead> &reads) {
  const int64_t out = features(getType());
  reads.push_back({getWeight(), uint32_t(getFormat()), out, features(getInput().getType()),
                   true});
  if (auto bias = getBias())
    reads.push_back({*bias, KILN_GGML_TYPE_F32, 1, out, false});
}

void LogitsOp::getWeightReads(SmallVectorImpl<WeightRead> &reads) {
  reads.push_back({getWeight(), uint32_t(getFormat()), features(getType()),
                   features(getInput().getType()), true});
}

// Rows of the stacked weight: every result's, twice for SwiGLU (gate and up interleaved).
void FusedLinearOp::getWeightReads(SmallVectorImpl<WeightRead> &reads) {
  int64_t rows = 0;
  for (Value r : getResults())
    rows += features(r.getType()) * (getSwiglu() ? 2 : 1);
  reads.push_back({getWeight(), uint32_t(getFormat()), rows, features(getInput().getType()),
                   true});
}
