//===- CalibratedRounding.h - weights rounded with their inputs' statistics -===//
//
// `--rounding weighted|gptq` (docs/precision.md): the calibration text is run once
// through the model with every weight f32 (llama.cpp's chunks, as auto scores them, every
// position counted) and each matrix's input second moment H = sum x x^T is kept, shared
// by the matrices that read one value (q, k, v). Each weight the precision map stores in
// a 32-element block format is then encoded by models/weights/CalibratedQuant.h and the
// encoding recorded in the weight store, where the reference executor and the weight
// layout read it. A table only `embed` reads (no input) is searched for plain squared
// error; a tied table uses the classifier's inputs. K-quants and f16 keep their encoders.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_PIPELINES_CALIBRATEDROUNDING_H
#define KILN_COMPILER_PIPELINES_CALIBRATEDROUNDING_H

#include <map>
#include <string>

#include "mlir/IR/BuiltinOps.h"

#include "compiler/pipelines/SlimmingSearch.h"
#include "models/weights/CalibratedQuant.h"
#include "models/weights/WeightStore.h"

namespace kiln::pipelines {

class CalibratedRounding {
public:
  explicit CalibratedRounding(quant::Rounding method) : method_(method) {}
  quant::Rounding method() const { return method_; }

  // Measures the input statistics of every linear/logits weight `module` reads (a copy
  // runs with every weight f32). One-line error.
  bool collect(mlir::ModuleOp module, const WeightStore &store, const Calibration &calib,
               std::string &error);
  // Records the encoding of weight `name` in `format` in the store, once; nothing for a
  // format without a calibrated encoder (it keeps rounding to nearest).
  bool encode(WeightStore &store, const std::string &name, uint32_t format,
              std::string &error);
  // encode() for every weight read of the module in its op's format; `count` gets how
  // many weights were encoded.
  bool encodeModule(mlir::ModuleOp module, WeightStore &store, size_t &count,
                    std::string &error);
  size_t positions() const { return positions_; }
  double statsSeconds() const { return statsSeconds_; }
  double encodeSeconds() const { return encodeSeconds_; }

private:
  quant::Rounding method_;
  std::map<int32_t, quant::InputStats> stats_; // by the executor's input id
  // made once per input (q, k and v share one), or per width for a table without inputs
  std::map<std::pair<int32_t, uint64_t>, quant::RoundingPlan> plans_;
  std::map<std::string, int32_t> inputOf_;     // weight -> input id
  size_t positions_ = 0;
  double statsSeconds_ = 0, encodeSeconds_ = 0; // wall clock
};

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_CALIBRATEDROUNDING_H
