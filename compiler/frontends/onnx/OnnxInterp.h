//===- OnnxInterp.h - evaluate an ONNX graph's small values ---------------===//
//
// A reference interpreter for the ops exporters use to compute shapes, position tables
// and masks. Every value gets concrete dimensions; values small enough (shape vectors,
// masks, cos/sin tables) also get their elements. Two uses:
//  * constant folding: nodes whose inputs are all constants are evaluated once and become
//    initializers (OnnxFold.cpp);
//  * probing: with every symbolic dimension bound to a number (sequence 5, past 3, ...), the
//    raising patterns read what a Reshape target or a mask really is, and compare two
//    bindings to tell fixed numbers (heads, head size) from sequence-dependent ones.
// Large activations are never computed: only their shapes are.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_ONNXINTERP_H
#define KILN_FRONTENDS_ONNX_ONNXINTERP_H

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontends/onnx/OnnxGraph.h"

namespace kiln::onnx {

struct Value {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  bool hasData = false;
  std::vector<double> data; // row-major; floats rounded to the dtype after every op

  uint64_t numElements() const;
  static Value fromTensor(const Tensor &t, uint64_t maxElements);
  Tensor toTensor() const;
};

// Values above this many elements keep their shape only.
constexpr uint64_t kMaxInterpElements = uint64_t(1) << 20;
// Matrices above this many elements are weights to the probe (shape only): a cos/sin table
// of 4096 positions x 64 fits, a projection of a 2048-wide model does not.
constexpr uint64_t kMaxProbeTable = uint64_t(1) << 18;

// Evaluates one node. `in` holds the inputs (absent optional inputs as Undefined values).
// Returns false with a one-line `error` when the node is malformed or the op is not one the
// interpreter knows; a known op whose inputs lack data yields shapes only.
bool evalNode(const Node &n, const std::vector<const Value *> &in, std::vector<Value> &out,
              std::string &error);

// Runs the whole graph with graph inputs shaped by `bindings` (symbol -> size; inputs with
// data given in `inputData` keep it). Fills `values` for every value it could shape.
bool probeGraph(const Graph &g, const std::map<std::string, int64_t> &bindings,
                const std::map<std::string, Value> &inputData, std::map<std::string, Value> &values,
                std::string &error);

} // namespace kiln::onnx

#endif // KILN_FRONTENDS_ONNX_ONNXINTERP_H
