//===- OnnxLoad.h - ONNX file -> OnnxGraph --------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_ONNXLOAD_H
#define KILN_FRONTENDS_ONNX_ONNXLOAD_H

#include <memory>
#include <string>

#include "compiler/frontends/onnx/OnnxGraph.h"

namespace kiln::onnx {

// Opsets of the default domain the importer reads.
constexpr int64_t kMinOpset = 13, kMaxOpset = 21;

// Reads a binary ModelProto (.onnx) or ONNX's textual syntax (a file whose first
// non-blank character is '<', as onnx.printer writes it; the lit tests use it). External
// initializer data (`location`, `offset`, `length`) is mapped from files beside the model.
// Every problem - not ONNX, truncated, an opset outside 13..21, a node reading a value
// before it is defined, external data missing or short - gives one line in `error`.
std::unique_ptr<Graph> loadOnnx(const std::string &path, std::string &error);

} // namespace kiln::onnx

#endif // KILN_FRONTENDS_ONNX_ONNXLOAD_H
