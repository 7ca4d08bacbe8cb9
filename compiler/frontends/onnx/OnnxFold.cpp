#include "compiler/frontends/onnx/OnnxFold.h"

#include <cstdio>
#include <set>

#include "compiler/frontends/onnx/OnnxInterp.h"

namespace kiln::onnx {

namespace {

// DequantizeLinear of a constant int8/uint8 weight (weight-only quantised ONNX): folded at
// any size, per tensor or per axis, into a float tensor of the scale's type that the
// linear pattern then reads like any float weight (kiln requantises it to --weights).
bool dequantizeWeight(const Graph &g, const Node &n, Tensor &out, std::string &error) {
  const Tensor *x = g.constant(n.inputs[0]);
  const Tensor *scale = n.inputs.size() > 1 ? g.constant(n.inputs[1]) : nullptr;
  const Tensor *zero = n.inputs.size() > 2 && !n.inputs[2].empty() ? g.constant(n.inputs[2]) : nullptr;
  if (!x || !scale || (n.inputs.size() > 2 && !n.inputs[2].empty() && !zero))
    return false;
  if (x->dtype != DType::Int8 && x->dtype != DType::UInt8) {
    error = n.describe() + ": dequantising " + dtypeName(x->dtype) +
            " weights is not supported (int8 and uint8 are)";
    return false;
  }
  if (n.attr("block_size")) {
    error = n.describe() + ": blocked DequantizeLinear (block_size) is not supported";
    return false;
  }
  const uint64_t count = x->numElements(), scales = scale->numElements();
  int64_t axis = n.intAttr("axis", 1);
  if (axis < 0)
    axis += int64_t(x->dims.size());
  uint64_t inner = 1;
  if (scales != 1) {
    if (axis < 0 || axis >= int64_t(x->dims.size()) || uint64_t(x->dims[size_t(axis)]) != scales ||
        (zero && zero->numElements() != scales)) {
      error = n.describe() + ": scale and zero point do not match the weight's axis " +
              std::to_string(axis);
      return false;
    }
    for (size_t i = size_t(axis) + 1; i < x->dims.size(); ++i)
      inner *= uint64_t(x->dims[i]);
  }
  std::vector<double> values(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t c = scales == 1 ? 0 : (i / inner) % scales;
    values[i] = (x->at(i) - (zero ? zero->at(c) : 0.0)) * scale->at(c);
  }
  Value v;
  v.dtype = scale->dtype == DType::Float16 ? DType::Float16 : DType::Float;
  v.dims = x->dims, v.hasData = true, v.data = std::move(values);
  out = v.toTensor();
  return true;
}

} // namespace

bool foldConstants(Graph &g, std::string &error) {
  std::set<std::string> outputs;
  for (const ValueInfo &o : g.outputs)
    outputs.insert(o.name);
  std::vector<Node> kept;
  std::map<std::string, Value> cache; // decoded constants, built on demand
  auto valueOf = [&](const std::string &name) -> const Value * {
    auto it = cache.find(name);
    if (it != cache.end())
      return &it->second;
    const Tensor *t = g.constant(name);
    if (!t || t->numElements() > kMaxInterpElements)
      return nullptr;
    return &(cache[name] = Value::fromTensor(*t, kMaxInterpElements));
  };
  Value absent;
  for (Node &n : g.nodes) {
    const Attribute *value = n.opType == "Constant" ? n.attr("value") : nullptr;
    if (value && value->kind == Attribute::TensorValue && n.outputs.size() == 1) {
      g.initializers[n.outputs[0]] = value->t; // exact bytes, whatever the size
      continue;
    }
    if (n.opType == "DequantizeLinear" && n.domain.empty() && n.outputs.size() == 1) {
      Tensor t;
      if (dequantizeWeight(g, n, t, error)) {
        g.initializers[n.outputs[0]] = std::move(t);
        continue;
      }
      if (!error.empty())
        return false;
    }
    // A Cast of a weight stays a node: the patterns read the weight in its stored type (an
    // f16 matrix stays f16 in kiln instead of doubling to f32).
    const Tensor *castOf = n.opType == "Cast" && n.inputs.size() == 1 ? g.constant(n.inputs[0]) : nullptr;
    bool foldable = n.domain.empty() && n.opType != "Gemm" &&
                    !(castOf && castOf->dims.size() >= 2 &&
                      (castOf->dtype == DType::Float16 || castOf->dtype == DType::BFloat16));
    std::vector<const Value *> in;
    for (const std::string &name : n.inputs) {
      const Value *v = name.empty() ? &absent : valueOf(name);
      if (!v) {
        foldable = false;
        break;
      }
      in.push_back(v);
    }
    for (const std::string &o : n.outputs)
      foldable &= !outputs.count(o); // a graph output stays computed by a node
    std::vector<Value> out;
    std::string evalError;
    if (foldable && !evalNode(n, in, out, evalError)) {
      if (n.opType == "Constant") {
        error = evalError;
        return false;
      }
      foldable = false; // ops the interpreter does not know stay as nodes
    }
    for (size_t i = 0; foldable && i < n.outputs.size(); ++i)
      foldable = i < out.size() && out[i].hasData;
    if (!foldable) {
      kept.push_back(std::move(n));
      continue;
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      g.initializers[n.outputs[i]] = out[i].toTensor();
      cache[n.outputs[i]] = std::move(out[i]);
    }
  }
  g.nodes = std::move(kept);
  g.removeDeadNodes();
  return true;
}

namespace {

std::string attrString(const Attribute &a) {
  char buf[64];
  switch (a.kind) {
  case Attribute::Float: std::snprintf(buf, sizeof buf, "%g", double(a.f)); return buf;
  case Attribute::Int: return std::to_string(a.i);
  case Attribute::String: return "\"" + a.s + "\"";
  case Attribute::Ints: {
    std::string s = "[";
    for (size_t i = 0; i < a.ints.size(); ++i)
      s += (i ? "," : "") + std::to_string(a.ints[i]);
    return s + "]";
  }
  case Attribute::Floats: {
    std::string s = "[";
    for (size_t i = 0; i < a.floats.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%g", i ? "," : "", double(a.floats[i]));
      s += buf;
    }
    return s + "]";
  }
  case Attribute::TensorValue: return std::string("tensor<") + dtypeName(a.t.dtype) + ">";
  case Attribute::Graph: return "graph";
  default: return "?";
  }
}

std::string tensorString(const Tensor &t) {
  std::string s = std::string(dtypeName(t.dtype)) + "[";
  for (size_t i = 0; i < t.dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(t.dims[i]);
  s += "]";
  if (t.numElements() <= 8) {
    s += " {";
    char buf[32];
    for (uint64_t i = 0; i < t.numElements(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%g", i ? "," : "", t.at(i));
      s += buf;
    }
    s += "}";
  }
  return s;
}

} // namespace

std::string printGraph(const Graph &g) {
  std::string s = "onnx-graph opset " + std::to_string(g.opset) +
                  (g.producer.empty() ? "" : ", producer " + g.producer) + "\n";
  for (const auto &[k, v] : g.metadata)
    s += "metadata " + k + " = \"" + v + "\"\n";
  for (const ValueInfo &in : g.inputs)
    s += "input %" + in.name + " : " + dtypeName(in.dtype) + shapeString(in.shape) + "\n";
  for (const auto &[name, t] : g.initializers)
    s += "initializer %" + name + " : " + tensorString(t) + "\n";
  for (const Node &n : g.nodes) {
    std::string line;
    for (size_t i = 0; i < n.outputs.size(); ++i)
      line += (i ? ", %" : "%") + n.outputs[i];
    line += " = " + (n.domain.empty() ? "" : n.domain + ".") + n.opType + "(";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      line += (i ? ", " : "") + (n.inputs[i].empty() ? std::string("<none>") : "%" + n.inputs[i]);
    line += ")";
    if (!n.attrs.empty()) {
      line += " {";
      bool first = true;
      for (const auto &[k, a] : n.attrs) {
        line += (first ? "" : ", ") + k + "=" + attrString(a);
        first = false;
      }
      line += "}";
    }
    s += line + "  // " + n.name + "\n";
  }
  for (const ValueInfo &o : g.outputs)
    s += "output %" + o.name + " : " + dtypeName(o.dtype) + shapeString(o.shape) + "\n";
  return s;
}

} // namespace kiln::onnx
