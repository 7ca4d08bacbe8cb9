//===- OnnxFold.h - constant folding of an imported ONNX graph ------------===//
#ifndef KILN_FRONTENDS_ONNX_ONNXFOLD_H
#define KILN_FRONTENDS_ONNX_ONNXFOLD_H

#include <string>

#include "compiler/frontends/onnx/OnnxGraph.h"

namespace kiln::onnx {

// Turns Constant nodes into initializers and evaluates every node whose inputs are all
// constants (shape arithmetic on fixed shapes, inverse-frequency tables, scale factors),
// replacing it by initializers; drops nodes nothing reads. Nodes that read large weights
// (a Transpose of a weight matrix) stay: the raising patterns look through them. Returns
// false with one line naming the node when a constant node is malformed.
bool foldConstants(Graph &g, std::string &error);

// Human-readable listing (`kiln import --emit=onnx`): inputs, initializers (shape only),
// one line per node, outputs.
std::string printGraph(const Graph &g);

} // namespace kiln::onnx

#endif // KILN_FRONTENDS_ONNX_ONNXFOLD_H
