//===- OpKernels.h - fp32 Eigen implementations of kiln ops ---------------===//
//
// One function per op of the reference executor, kept free of MLIR so each can be read
// (and tested) as plain math. Activations are row-major [tokens, features].
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_EVAL_OPKERNELS_H
#define KILN_COMPILER_EVAL_OPKERNELS_H

#include <functional>
#include <string>
#include <vector>

#include "compiler/eval/RefExecutor.h"

namespace kiln {

// out.row(t) = table.row(ids[t]); fails on an id outside the table.
bool embedRows(const Matrix &table, const std::vector<int32_t> &ids, Matrix &out,
               std::string &error);

// out = x / sqrt(mean(x^2) + eps) * weight, per row; the sum of squares is accumulated in
// double as ggml does.
void rmsNorm(const Matrix &x, const Matrix &weight, float eps, Matrix &out);

struct RopeParams {
  int32_t headDim;
  int32_t rotaryDims;
  float theta;
  bool rotateHalf; // pairs (i, i + rotaryDims/2) instead of (2i, 2i+1)
  std::vector<float> freqFactors = {}; // empty, or one divisor per pair (Llama 3)
};
// Rotates every head of every token by its position, as llama.cpp's rope does.
void applyRope(const Matrix &x, const std::vector<int32_t> &positions, const RopeParams &p,
               Matrix &out);

struct AttentionParams {
  int32_t heads;
  int32_t kvHeads;
  int32_t headDim;
  float scale;
  std::vector<int32_t> kvHeadOf; // query head -> KV head
};

struct KvCache {
  Matrix k, v;         // [maxCtx, kvHeads * headDim]
  uint32_t length = 0; // positions 0..length-1 are valid
  KvFormat format;      // what the stored K/V are rounded to (see storeKvRow)
};

// Receives the softmax probabilities of query row `t`, head `head`, over cache positions
// 0..positions[t] (an observation hook for analyses; see RefExecutor's AttentionObserver).
using AttentionProbe =
    std::function<void(Eigen::Index t, int32_t head, const Eigen::VectorXf &probs)>;

// Rounds one token's K or V row of kvHeads heads of headDim values in place to what a
// cache of element type `e` holds: fp16, or int8 per head with scale max|x| / 127
// (KvFormat.h); the generated code (codegen/cpu/ukernels/*/attention.c) stores the same.
void roundKvRow(KvElem e, int32_t headDim, float *row, int64_t width);

// Appends k/v at `positions`, then causal softmax(scale * q K^T) V per head. `probe`, when
// given, sees every row of probabilities.
bool attention(const Matrix &q, const Matrix &k, const Matrix &v,
               const std::vector<int32_t> &positions, const AttentionParams &p,
               KvCache &cache, Matrix &out, std::string &error,
               const AttentionProbe *probe = nullptr);

} // namespace kiln

#endif // KILN_COMPILER_EVAL_OPKERNELS_H
