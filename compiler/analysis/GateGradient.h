//===- GateGradient.h - dL/dg for per-layer residual gates, by backpropagation ===//
//
// A gate g_l multiplies the residual branches of layer l (the outputs of its attn_output
// and ffn_down projections). At g = 1 the model is unchanged and
//   dL/dg_l = sum over the layer's residual adds of <dL/d(add result), branch value>,
// so one backward pass through the chunk's graph gives every layer's gate gradient.
// The backward pass is written here for the ops a decoder graph uses (embed is the leaf;
// rms_norm, linear/logits, rope, attention, silu, mul, add) from the activations the
// reference executor recorded in its forward pass (RefExecutor::setResultObserver).
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_ANALYSIS_GATEGRADIENT_H
#define KILN_COMPILER_ANALYSIS_GATEGRADIENT_H

#include <memory>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "compiler/analysis/ModelLayout.h"
#include "compiler/eval/RefExecutor.h"

namespace kiln::analysis {

class GateGradient {
public:
  // Null + one line for an op it cannot differentiate or a weight it cannot decode.
  static std::unique_ptr<GateGradient> create(mlir::ModuleOp module, const WeightStore &store,
                                              const std::vector<LayerLayout> &layers,
                                              std::string &error);
  ~GateGradient();

  // One chunk evaluated from an empty cache at positions 0..T-1: `acts[i]` is the result
  // of op i of @forward (as recorded), `dLogits` the loss gradient with respect to the
  // logits. Adds dL/dg of layers[k] to gateGrad[k].
  bool accumulate(const std::vector<Matrix> &acts, const Matrix &dLogits,
                  std::vector<double> &gateGrad, std::string &error) const;

private:
  struct Impl;
  explicit GateGradient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::analysis

#endif // KILN_COMPILER_ANALYSIS_GATEGRADIENT_H
