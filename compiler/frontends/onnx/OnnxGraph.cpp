#include "compiler/frontends/onnx/OnnxGraph.h"

#include <cstring>
#include <set>

#include "kiln/quant.h"

namespace kiln::onnx {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::Float: return "float";
  case DType::UInt8: return "uint8";
  case DType::Int8: return "int8";
  case DType::Int32: return "int32";
  case DType::Int64: return "int64";
  case DType::Bool: return "bool";
  case DType::Float16: return "float16";
  case DType::Double: return "double";
  case DType::BFloat16: return "bfloat16";
  default: return "?";
  }
}

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::UInt8: case DType::Int8: case DType::Bool: return 1;
  case DType::Float16: case DType::BFloat16: return 2;
  case DType::Float: case DType::Int32: return 4;
  case DType::Int64: case DType::Double: return 8;
  default: return 0;
  }
}

std::string shapeString(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i)
      out += ",";
    out += s[i].known() ? std::to_string(s[i].value) : s[i].symbol.empty() ? "?" : s[i].symbol;
  }
  return out + "]";
}

uint64_t Tensor::numElements() const {
  uint64_t n = 1;
  for (int64_t d : dims)
    n *= uint64_t(d);
  return n;
}

double Tensor::at(uint64_t i) const {
  const uint8_t *p = data + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::Float: { float v; std::memcpy(&v, p, 4); return v; }
  case DType::Double: { double v; std::memcpy(&v, p, 8); return v; }
  case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case DType::Int8: return int8_t(*p);
  case DType::UInt8: case DType::Bool: return *p;
  case DType::Float16: { uint16_t h; std::memcpy(&h, p, 2); return kiln_fp16_to_fp32(h); }
  case DType::BFloat16: {
    uint16_t h; std::memcpy(&h, p, 2);
    uint32_t bits = uint32_t(h) << 16; float v; std::memcpy(&v, &bits, 4); return v;
  }
  default: return 0;
  }
}

int64_t Node::intAttr(const std::string &n, int64_t dflt) const {
  const Attribute *a = attr(n);
  return a && a->kind == Attribute::Int ? a->i : dflt;
}

float Node::floatAttr(const std::string &n, float dflt) const {
  const Attribute *a = attr(n);
  return a && a->kind == Attribute::Float ? a->f : dflt;
}

std::string Node::describe() const {
  return (domain.empty() ? "" : domain + ".") + opType + " node '" + name + "'";
}

void Graph::removeDeadNodes() {
  std::set<std::string> live;
  for (const ValueInfo &o : outputs)
    live.insert(o.name);
  std::vector<bool> keep(nodes.size(), false);
  for (size_t i = nodes.size(); i-- > 0;) {
    for (const std::string &o : nodes[i].outputs)
      if (live.count(o))
        keep[i] = true;
    if (keep[i])
      for (const std::string &in : nodes[i].inputs)
        live.insert(in);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (keep[i])
      kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
  for (auto it = initializers.begin(); it != initializers.end();)
    it = live.count(it->first) ? std::next(it) : initializers.erase(it);
}

} // namespace kiln::onnx
