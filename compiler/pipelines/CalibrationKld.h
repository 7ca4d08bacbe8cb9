//===- CalibrationKld.h - how far a module's predictions are from the f32 model's -===//
//
// The f32 reference's log-probabilities on the scored calibration positions (llama.cpp's
// chunks: BOS first, second half scored), then the mean KL(P_ref || P) of any module with
// the same vocabulary, run by the reference executor. What auto precision measures each
// candidate with, and what --rotate auto compares.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_PIPELINES_CALIBRATIONKLD_H
#define KILN_COMPILER_PIPELINES_CALIBRATIONKLD_H

#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "compiler/pipelines/SlimmingSearch.h"
#include "models/weights/WeightStore.h"

namespace kiln::pipelines {

class CalibrationKld {
public:
  CalibrationKld(const WeightStore &store, const Calibration &calib)
      : store(store), calib(calib) {}

  // Runs the reference (weights as `reference` reads them; callers pass an f32 copy).
  bool init(mlir::ModuleOp reference, std::string &error);
  // Mean KL(P_reference || P_module) over the scored positions, nats.
  bool kld(mlir::ModuleOp module, double &out, std::string &error) {
    return run(module, &out, error);
  }
  size_t positions() const { return rows; }

private:
  bool run(mlir::ModuleOp module, double *kldOut, std::string &error);

  const WeightStore &store;
  const Calibration &calib;
  std::vector<std::vector<int32_t>> chunks;
  std::vector<double> logP, p; // reference, rows x vocab
  size_t rows = 0;
};

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_CALIBRATIONKLD_H
