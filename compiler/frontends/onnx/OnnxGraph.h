//===- OnnxGraph.h - an ONNX graph as plain C++ (phase 1 of the importer) -===//
//
// The mechanical import: one Node per ONNX node, op type and attributes as written,
// initializers as views of the file (or of the external data file beside it), symbolic
// dimensions kept by name. Raising patterns (OnnxRaise.h) rewrite this graph in place.
// No protobuf, LLVM or MLIR here, so the sanitizer corpus test can rebuild the whole
// importer cheaply; OnnxLoad.cpp is the only file that sees the protobuf classes.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_ONNXGRAPH_H
#define KILN_FRONTENDS_ONNX_ONNXGRAPH_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::onnx {

// TensorProto.DataType values kiln reads.
enum class DType : int32_t {
  Undefined = 0, Float = 1, UInt8 = 2, Int8 = 3, Int32 = 6, Int64 = 7, Bool = 9,
  Float16 = 10, Double = 11, BFloat16 = 16,
};
const char *dtypeName(DType t);
// Bytes per element; 0 for types kiln does not read.
size_t dtypeSize(DType t);

// A dimension: a number, or a name (batch, sequence_length) when the graph leaves it open.
struct Dim {
  int64_t value = -1; // -1 when symbolic or unknown
  std::string symbol; // "" when a number or unknown
  bool known() const { return value >= 0; }
};
using Shape = std::vector<Dim>;
std::string shapeString(const Shape &s);

// An initializer or a constant: bytes in ONNX's little-endian layout.
struct Tensor {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  const uint8_t *data = nullptr; // into the model file, the external data file or `owned`
  uint64_t nbytes = 0;
  std::shared_ptr<std::vector<uint8_t>> owned; // typed-field and folded tensors

  uint64_t numElements() const;
  // Element i as a double / int64 (any numeric dtype; fp16/bf16 decoded).
  double at(uint64_t i) const;
  int64_t intAt(uint64_t i) const { return int64_t(at(i)); }
};

struct Attribute {
  enum Kind { Float, Int, String, TensorValue, Floats, Ints, Strings, Graph, Other } kind = Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name; // may be empty in the file; the loader names it "<op>_<index>"
  std::string opType;
  std::string domain; // "" is the default ONNX domain; "kiln" for raised nodes
  std::vector<std::string> inputs; // "" for an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attrs;

  const Attribute *attr(const std::string &n) const {
    auto it = attrs.find(n);
    return it == attrs.end() ? nullptr : &it->second;
  }
  int64_t intAttr(const std::string &n, int64_t dflt) const;
  float floatAttr(const std::string &n, float dflt) const;
  // "Op 'name'" for error messages.
  std::string describe() const;
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::Undefined;
  Shape shape;
};

// The whole model. Values are named by strings, as in ONNX.
struct Graph {
  int64_t opset = 0;     // default-domain opset
  std::string producer;  // producer_name + version
  std::map<std::string, std::string> metadata; // metadata_props
  std::vector<ValueInfo> inputs, outputs;
  std::vector<Node> nodes; // topological order (checked by the loader)
  std::map<std::string, Tensor> initializers;
  // Shapes and types known for values (graph inputs, value_info, and shape inference).
  std::map<std::string, ValueInfo> valueInfo;
  // Backing storage the views point into (the parsed file, mapped external data).
  std::vector<std::shared_ptr<void>> keepAlive;

  const Tensor *constant(const std::string &value) const {
    auto it = initializers.find(value);
    return it == initializers.end() ? nullptr : &it->second;
  }
  const ValueInfo *info(const std::string &value) const {
    auto it = valueInfo.find(value);
    return it == valueInfo.end() ? nullptr : &it->second;
  }
  // Drops nodes whose outputs nobody reads (graph outputs count as read) and
  // initializers nobody names.
  void removeDeadNodes();
};

} // namespace kiln::onnx

#endif // KILN_FRONTENDS_ONNX_ONNXGRAPH_H
