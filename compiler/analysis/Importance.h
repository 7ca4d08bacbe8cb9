//===- Importance.h - layer and head importance on calibration text -------===//
//
// Measures, with the fp32 reference executor on the user's calibration tokens, how much
// each decoder layer and each attention head contributes. Slimming passes rank what to
// cut by these numbers; `kiln analyze` prints them and draws them.
//
// Chunking follows the perplexity method (compiler/eval/Perplexity.h): chunks of `ctx`
// tokens starting with BOS, each from an empty cache, scored on their second half.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_ANALYSIS_IMPORTANCE_H
#define KILN_COMPILER_ANALYSIS_IMPORTANCE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "models/weights/WeightStore.h"

namespace kiln::analysis {

struct CalibrationSet {
  std::vector<int32_t> tokens; // the whole calibration text, tokenised with BOS
  int32_t bos = 1;
  uint32_t ctx = 256;          // chunk length
  size_t maxChunks = 0;        // 0: all floor(n / ctx) chunks
};

struct LayerScore {
  int32_t layer = 0;
  double ablationKld = 0;      // mean KL(P_full || P_without_layer), nats
  double ablationPpl = 0;      // calibration PPL with the layer removed
  double blockInfluence = 0;   // mean over tokens of 1 - cos(layer input, layer output)
  double gradientScore = 0;    // |dL/dg| for a gate g on the layer's residual branches, at g = 1
  double gradient = 0;         // dL/dg itself (L = mean NLL over the scored positions)
};

struct HeadScore {
  int32_t layer = 0;
  int32_t head = 0;            // query head index within the layer
  int32_t kvHead = 0;          // the KV head it reads
  double entropy = 0;          // mean attention entropy over scored positions, nats
  double ablationKld = 0;      // mean KL(P_full || P_without_head), nats
  double ablationPpl = 0;      // calibration PPL with the head removed
};

struct ImportanceReport {
  double basePpl = 0;          // calibration PPL of the unmodified model
  uint32_t ctx = 0;            // chunk length used
  size_t chunks = 0;           // chunks evaluated
  size_t scored = 0;           // scored positions (predictions) in all chunks
  std::vector<LayerScore> layers;
  std::vector<HeadScore> heads;
  // Spearman rank correlations with the ablation-KLD ranking (NaN when undefined: fewer
  // than two layers/heads, or a series with a single value). Heads pool every layer.
  double blockInfluenceVsAblation = 0;
  double gradientVsAblation = 0;
  double headEntropyVsAblation = 0;
};

// What to measure (each part costs calibration passes: one forward pass per ablated layer or
// head; the gradient is one backward pass on top of the base pass).
struct ImportanceOptions {
  bool layerAblation = true;
  bool headAblation = true;
  bool gradient = true;
  // Called before each pass: `what` names it ("base", "layer 3", "head 2.5"), `done` of `total`.
  std::function<void(const std::string &what, size_t done, size_t total)> progress;
};

// Everything above for `module` (a kiln module with kiln.layer-tagged ops) and `store`
// (which must resolve every weight the module names, derived ones included; it is only read).
// Scores that `options` skips stay 0.
bool measureImportance(mlir::ModuleOp module, const WeightStore &store,
                       const CalibrationSet &calib, ImportanceReport &out, std::string &error,
                       const ImportanceOptions &options = {});

// Spearman rank correlation of two equally long series (average ranks for ties); NaN when
// it is undefined (lengths differ, fewer than two entries, or either series is constant).
double spearman(const std::vector<double> &a, const std::vector<double> &b);

// Ranks for display, 1 = the largest value; ties share the best rank ("competition" ranks).
std::vector<int32_t> ranksDescending(const std::vector<double> &values);

} // namespace kiln::analysis

#endif // KILN_COMPILER_ANALYSIS_IMPORTANCE_H
