//===- OnnxToLlama.h - raised ONNX graph -> Llama hyper-parameters + weights -===//
//
// The last step of the ONNX import: the raised graph (raise/Raise.h) must be exactly a
// Llama decoder - embedding, then per layer RMSNorm, q/k/v projections, RoPE, attention,
// output projection, residual add, RMSNorm, SwiGLU FFN, residual add, then the final
// RMSNorm and the classifier. Its weights go into the store under llama.cpp's GGUF names
// and layout (rows of input width), so models/llama builds the same IR for both formats.
// A node that is not raised, or a structure out of place, is an error naming the node.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_ONNXTOLLAMA_H
#define KILN_FRONTENDS_ONNX_ONNXTOLLAMA_H

#include <string>

#include "compiler/frontends/onnx/OnnxGraph.h"
#include "models/weights/WeightStore.h"
#include "models/llama/LlamaConfig.h"

namespace kiln::onnx {

// Weights stored [in, out] are transposed into owned copies; the others are views of
// the graph's initializers, so `g` must outlive `weights`.
bool assembleLlama(Graph &g, llama::LlamaConfig &config, WeightStore &weights,
                   std::string &error);

} // namespace kiln::onnx

#endif // KILN_FRONTENDS_ONNX_ONNXTOLLAMA_H
