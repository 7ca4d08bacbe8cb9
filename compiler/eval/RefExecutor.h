//===- RefExecutor.h - fp32 reference executor for kiln IR ----------------===//
//
// Runs the `forward` function of a kiln module op by op in fp32 with Eigen, with a KV
// cache per attention layer. It is the numerical oracle of every later test and the
// engine of calibration, so it favours being obviously right over being fast: weights
// are decoded to fp32 once, every op is a few lines of Eigen. Each weight is read as the
// artifact stores it in its op's `format` (WeightStore::dequantizeAs).
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_EVAL_REFEXECUTOR_H
#define KILN_COMPILER_EVAL_REFEXECUTOR_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "dialects/kiln/IR/KvFormat.h"

namespace mlir {
class ModuleOp;
}

namespace kiln {

class WeightStore;

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// How the KV cache stores K and V (KvFormat.h). The executor computes in fp32 either way;
// it rounds what is stored exactly as the generated code stores it (f16: as llama.cpp's
// default cache; int8 K: per token and KV head, symmetric).
using KvStorage = KvFormat;

// What the observation hooks are told about the op that just ran.
struct ObservedOp {
  uint32_t index = 0;  // position of the op in @forward's body, counted from 0
  std::string name;    // e.g. "kiln.linear"
  int32_t layer = -1;  // the op's kiln.layer attribute; -1 when it has none
  std::string weight;  // the weight it reads; empty for ops without one
  // linear, logits, fused_linear: the activation it multiplies (one id per value, so
  // ops reading the same value - q, k and v - share it); -1 for other ops
  int32_t input = -1;
};

// Observation hooks for analyses (importance scores, calibration statistics). Unset, they
// cost nothing; set, they see values but cannot change them.
// Called after each op with the op's result ([tokens, features] of this forward call).
using ResultObserver = std::function<void(const ObservedOp &op, const Matrix &result)>;
// Called before each linear, logits and fused_linear op with its input ([tokens, in]).
using InputObserver = std::function<void(const ObservedOp &op, const Matrix &input)>;
// Called by every attention op for each query row `t` of this forward call and each query
// head, with the softmax probabilities over cache positions 0..pos (pos = the row's
// position; entries sum to 1).
using AttentionObserver = std::function<void(const ObservedOp &op, Eigen::Index t,
                                             int32_t head, const Eigen::VectorXf &probs)>;

class RefExecutor {
public:
  // Binds every weight the module names (decoding it to fp32 and checking its shape
  // against the op) and sizes the KV cache to `maxCtx` positions. Null + one-line error
  // when the module or the weights do not fit together.
  static std::unique_ptr<RefExecutor> create(mlir::ModuleOp module, const WeightStore &weights,
                                             uint32_t maxCtx, std::string &error,
                                             KvStorage kv = KvStorage());
  ~RefExecutor();

  uint32_t vocabSize() const;
  uint32_t maxCtx() const;
  // Forgets every cached position (start of a new sequence).
  void resetCache();
  // Evaluates `tokens` at positions startPos, startPos+1, ...; the cache must already
  // hold positions 0..startPos-1 of this sequence. `logits` gets one row per token.
  bool forward(const std::vector<int32_t> &tokens, uint32_t startPos, Matrix &logits,
               std::string &error);

  // Observation hooks (see above); an empty function removes one.
  void setResultObserver(ResultObserver observer);
  void setAttentionObserver(AttentionObserver observer);
  void setInputObserver(InputObserver observer);
  // The ops forward() runs, in order (every op of @forward but the return).
  const std::vector<ObservedOp> &ops() const;

private:
  struct Impl;
  explicit RefExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln

#endif // KILN_COMPILER_EVAL_REFEXECUTOR_H
