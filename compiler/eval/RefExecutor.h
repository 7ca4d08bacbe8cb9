//===- RefExecutor.h - fp32 reference executor for kiln IR ----------------===//
//
// Runs the `forward` function of a kiln module op by op in fp32 with Eigen, with a KV
// cache per attention layer. It is the numerical oracle of every later test and the
// engine of calibration, so it favours being obviously right over being fast: weights
// are decoded to fp32 once, every op is a few lines of Eigen.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_EVAL_REFEXECUTOR_H
#define KILN_COMPILER_EVAL_REFEXECUTOR_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

namespace mlir {
class ModuleOp;
}

namespace kiln {

class WeightStore;

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// How the KV cache stores K and V. The executor computes in fp32 either way; F16 rounds
// what is stored, which is what llama.cpp does by default (useful for exact comparisons).
enum class KvStorage { F32, F16 };

class RefExecutor {
public:
  // Binds every weight the module names (decoding it to fp32 and checking its shape
  // against the op) and sizes the KV cache to `maxCtx` positions. Null + one-line error
  // when the module or the weights do not fit together.
  static std::unique_ptr<RefExecutor> create(mlir::ModuleOp module, const WeightStore &weights,
                                             uint32_t maxCtx, std::string &error,
                                             KvStorage kv = KvStorage::F32);
  ~RefExecutor();

  uint32_t vocabSize() const;
  uint32_t maxCtx() const;
  // Forgets every cached position (start of a new sequence).
  void resetCache();
  // Evaluates `tokens` at positions startPos, startPos+1, ...; the cache must already
  // hold positions 0..startPos-1 of this sequence. `logits` gets one row per token.
  bool forward(const std::vector<int32_t> &tokens, uint32_t startPos, Matrix &logits,
               std::string &error);

private:
  struct Impl;
  explicit RefExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln

#endif // KILN_COMPILER_EVAL_REFEXECUTOR_H
