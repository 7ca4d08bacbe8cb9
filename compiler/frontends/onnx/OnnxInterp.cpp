#include "compiler/frontends/onnx/OnnxInterp.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "kiln/quant.h"

namespace kiln::onnx {

uint64_t Value::numElements() const {
  uint64_t n = 1;
  for (int64_t d : dims)
    n *= uint64_t(d);
  return n;
}

Value Value::fromTensor(const Tensor &t, uint64_t maxElements) {
  Value v;
  v.dtype = t.dtype, v.dims = t.dims;
  uint64_t n = t.numElements();
  if (n <= maxElements && t.data) {
    v.hasData = true;
    v.data.resize(n);
    for (uint64_t i = 0; i < n; ++i)
      v.data[i] = t.at(i);
  }
  return v;
}

Tensor Value::toTensor() const {
  Tensor t;
  t.dtype = dtype, t.dims = dims;
  const size_t es = dtypeSize(dtype);
  t.owned = std::make_shared<std::vector<uint8_t>>(data.size() * es);
  uint8_t *p = t.owned->data();
  for (size_t i = 0; i < data.size(); ++i, p += es) {
    double x = data[i];
    switch (dtype) {
    case DType::Float: { float f = float(x); std::memcpy(p, &f, 4); break; }
    case DType::Double: std::memcpy(p, &x, 8); break;
    case DType::Int64: {
      // Saturating, NaN as 0: a float-to-integer cast out of range is undefined behaviour.
      int64_t v = x != x ? 0 : x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : int64_t(x);
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::Int32: {
      int32_t v = x != x            ? 0
                  : x >= 2147483647.0  ? INT32_MAX
                  : x <= -2147483648.0 ? INT32_MIN
                                       : int32_t(x);
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::Float16: { uint16_t h = kiln_fp32_to_fp16(float(x)); std::memcpy(p, &h, 2); break; }
    case DType::BFloat16: {
      float f = float(x); uint32_t b; std::memcpy(&b, &f, 4);
      uint16_t h = uint16_t((b + 0x7fff + ((b >> 16) & 1)) >> 16); std::memcpy(p, &h, 2); break;
    }
    default: // int8, uint8, bool
      *p = uint8_t(x != x || x <= -9.2e18 || x >= 9.2e18 ? 0 : int64_t(x));
      break;
    }
  }
  t.data = t.owned->data(), t.nbytes = t.owned->size();
  return t;
}

namespace {

bool isFloat(DType t) {
  return t == DType::Float || t == DType::Float16 || t == DType::Double || t == DType::BFloat16;
}

double roundTo(DType t, double x) {
  switch (t) {
  case DType::Float: return double(float(x));
  case DType::Float16: return kiln_fp16_to_fp32(kiln_fp32_to_fp16(float(x)));
  case DType::Double: return x;
  case DType::Bool: return x != 0 ? 1 : 0;
  case DType::BFloat16: return double(float(x)); // close enough for probing
  default: return std::isfinite(x) ? std::trunc(x) : 0;
  }
}

std::vector<uint64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<uint64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * uint64_t(dims[i]);
  return s;
}

bool broadcastDims(const std::vector<const Value *> &in, std::vector<int64_t> &out) {
  size_t rank = 0;
  for (const Value *v : in)
    rank = std::max(rank, v->dims.size());
  out.assign(rank, 1);
  for (const Value *v : in)
    for (size_t i = 0; i < v->dims.size(); ++i) {
      int64_t d = v->dims[v->dims.size() - 1 - i];
      int64_t &o = out[rank - 1 - i];
      if (d != 1 && o != 1 && d != o)
        return false;
      if (d != 1)
        o = d;
    }
  return true;
}

// Element of `v` at the broadcast position `idx` of the output.
double broadcastAt(const Value &v, const std::vector<int64_t> &outDims,
                   const std::vector<int64_t> &idx) {
  uint64_t off = 0, stride = 1;
  for (size_t i = 0; i < v.dims.size(); ++i) {
    size_t vi = v.dims.size() - 1 - i, oi = outDims.size() - 1 - i;
    if (v.dims[vi] != 1)
      off += uint64_t(idx[oi]) * stride;
    stride *= uint64_t(v.dims[vi]);
  }
  return v.data[off];
}

void nextIndex(std::vector<int64_t> &idx, const std::vector<int64_t> &dims) {
  for (size_t i = dims.size(); i-- > 0;) {
    if (++idx[i] < dims[i])
      return;
    idx[i] = 0;
  }
}

bool allData(const std::vector<const Value *> &in) {
  for (const Value *v : in)
    if (!v->hasData)
      return false;
  return true;
}

int64_t normAxis(int64_t a, size_t rank) { return a < 0 ? a + int64_t(rank) : a; }

// Saturating: Slice ends are often INT64_MAX, which a double rounds above the range.
int64_t toInt(double x) {
  if (x != x) // NaN: an index no tensor has (the cast itself would be undefined)
    return INT64_MIN;
  if (x >= 9.2e18)
    return INT64_MAX;
  if (x <= -9.2e18)
    return INT64_MIN;
  return int64_t(x);
}

// Integer list from an input (axes, shapes, starts...).
bool intsOf(const Value *v, std::vector<int64_t> &out) {
  if (!v || !v->hasData)
    return false;
  out.clear();
  for (double x : v->data) {
    if (x != x) // NaN has no integer value (fuzz-onnx: the cast was undefined behaviour)
      return false;
    out.push_back(toInt(x));
  }
  return true;
}

class Eval {
public:
  Eval(const Node &n, const std::vector<const Value *> &in, std::vector<Value> &out,
       std::string &error)
      : n_(n), in_(in), out_(out), error_(error) {}
  bool run();

private:
  bool fail(const std::string &why) {
    error_ = n_.describe() + ": " + why;
    return false;
  }
  const Value *input(size_t i) const {
    return i < in_.size() && in_[i]->dtype != DType::Undefined ? in_[i] : nullptr;
  }
  Value &result(DType t, std::vector<int64_t> dims) {
    out_.resize(1);
    out_[0].dtype = t, out_[0].dims = std::move(dims);
    return out_[0];
  }
  bool elementwise(DType outType, const std::function<double(const std::vector<double> &)> &f);
  bool unary(const std::function<double(double)> &f) {
    return elementwise(in_[0]->dtype, [&](const std::vector<double> &x) { return f(x[0]); });
  }
  bool gather(), slice(), reshape(), transpose(), matmul(), reduce(), concat(), trilu(),
      softmax();

  const Node &n_;
  const std::vector<const Value *> &in_;
  std::vector<Value> &out_;
  std::string &error_;
};

bool Eval::elementwise(DType outType,
                       const std::function<double(const std::vector<double> &)> &f) {
  std::vector<int64_t> dims;
  if (!broadcastDims(in_, dims))
    return fail("operand shapes do not broadcast");
  Value &r = result(outType, dims);
  if (!allData(in_) || r.numElements() > kMaxInterpElements)
    return true;
  r.hasData = true;
  r.data.resize(r.numElements());
  std::vector<int64_t> idx(dims.size(), 0);
  std::vector<double> x(in_.size());
  for (uint64_t e = 0; e < r.data.size(); ++e, nextIndex(idx, dims)) {
    for (size_t k = 0; k < in_.size(); ++k)
      x[k] = broadcastAt(*in_[k], dims, idx);
    r.data[e] = roundTo(outType, f(x));
  }
  return true;
}

bool Eval::gather() {
  const Value &d = *in_[0], &ix = *in_[1];
  int64_t axis = normAxis(n_.intAttr("axis", 0), d.dims.size());
  if (axis < 0 || axis >= int64_t(d.dims.size()))
    return fail("axis out of range");
  std::vector<int64_t> dims(d.dims.begin(), d.dims.begin() + axis);
  dims.insert(dims.end(), ix.dims.begin(), ix.dims.end());
  dims.insert(dims.end(), d.dims.begin() + axis + 1, d.dims.end());
  Value &r = result(d.dtype, dims);
  if (!d.hasData || !ix.hasData || r.numElements() > kMaxInterpElements)
    return true;
  uint64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= uint64_t(d.dims[size_t(i)]);
  for (size_t i = size_t(axis) + 1; i < d.dims.size(); ++i)
    inner *= uint64_t(d.dims[i]);
  const int64_t len = d.dims[size_t(axis)];
  r.hasData = true;
  for (uint64_t o = 0; o < outer; ++o)
    for (double xi : ix.data) {
      const int64_t v = toInt(xi);
      int64_t k = v < 0 && v > INT64_MIN ? v + len : v;
      if (k < 0 || k >= len)
        return fail("index " + std::to_string(v) + " out of range");
      for (uint64_t i = 0; i < inner; ++i)
        r.data.push_back(d.data[(o * uint64_t(len) + uint64_t(k)) * inner + i]);
    }
  return true;
}

bool Eval::slice() {
  const Value &d = *in_[0];
  std::vector<int64_t> starts, ends, axes, steps;
  if (!intsOf(input(1), starts) || !intsOf(input(2), ends))
    return fail("starts and ends must be known when kiln imports the graph");
  if (!intsOf(input(3), axes))
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (!intsOf(input(4), steps))
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || ends.size() != starts.size() || steps.size() != starts.size())
    return fail("starts, ends, axes and steps differ in length");
  const size_t rank = d.dims.size();
  std::vector<int64_t> lo(rank, 0), step(rank, 1), dims = d.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normAxis(axes[i], rank);
    if (a < 0 || a >= int64_t(rank) || steps[i] == 0)
      return fail("bad axis or step");
    int64_t len = d.dims[size_t(a)], s = starts[i], e = ends[i];
    if (s < 0) s += len;
    if (e < 0) e += len;
    if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, len), e = std::clamp<int64_t>(e, 0, len);
      dims[size_t(a)] = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, len - 1), e = std::clamp<int64_t>(e, -1, len - 1);
      dims[size_t(a)] = s > e ? (s - e - steps[i] - 1) / -steps[i] : 0;
    }
    lo[size_t(a)] = s, step[size_t(a)] = steps[i];
  }
  Value &r = result(d.dtype, dims);
  if (!d.hasData || r.numElements() > kMaxInterpElements)
    return true;
  r.hasData = true;
  auto st = stridesOf(d.dims);
  std::vector<int64_t> idx(rank, 0);
  for (uint64_t e = 0; e < r.numElements(); ++e, nextIndex(idx, dims)) {
    uint64_t off = 0;
    for (size_t k = 0; k < rank; ++k)
      off += uint64_t(lo[k] + idx[k] * step[k]) * st[k];
    r.data.push_back(d.data[off]);
  }
  return true;
}

bool Eval::reshape() {
  const Value &d = *in_[0];
  std::vector<int64_t> shape;
  if (!intsOf(input(1), shape))
    return fail("the target shape must be known when kiln imports the graph");
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !n_.intAttr("allowzero", 0))
      shape[i] = i < d.dims.size() ? d.dims[i] : 0;
    if (shape[i] == -1) {
      if (infer >= 0)
        return fail("two -1 entries in the target shape");
      infer = int64_t(i);
    } else if (shape[i] < 0 || __builtin_mul_overflow(known, shape[i], &known)) {
      // Found by fuzzing (tests/fuzz, fuzz-onnx): a huge entry overflowed the product.
      return fail("target shape entry " + std::to_string(shape[i]) +
                  (shape[i] < 0 ? " is negative" : " makes the element count overflow"));
    }
  }
  int64_t total = int64_t(d.numElements());
  if (infer >= 0)
    shape[size_t(infer)] = known ? total / known : 0;
  int64_t n = 1;
  for (int64_t s : shape)
    if (__builtin_mul_overflow(n, s, &n))
      return fail("the target shape's element count overflows");
  if (n != total)
    return fail("cannot reshape " + std::to_string(total) + " elements to " +
                std::to_string(n));
  Value &r = result(d.dtype, shape);
  r.hasData = d.hasData, r.data = d.data;
  return true;
}

bool Eval::transpose() {
  const Value &d = *in_[0];
  const size_t rank = d.dims.size();
  std::vector<int64_t> perm;
  if (const Attribute *a = n_.attr("perm"))
    perm = a->ints;
  else
    for (size_t i = rank; i-- > 0;)
      perm.push_back(int64_t(i));
  if (perm.size() != rank)
    return fail("perm has the wrong length");
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(rank) || seen[size_t(p)])
      return fail("perm is not a permutation of the axes");
    seen[size_t(p)] = true;
  }
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i)
    dims[i] = d.dims[size_t(perm[i])];
  Value &r = result(d.dtype, dims);
  if (!d.hasData || r.numElements() > kMaxInterpElements)
    return true;
  r.hasData = true;
  auto st = stridesOf(d.dims);
  std::vector<int64_t> idx(rank, 0);
  for (uint64_t e = 0; e < r.numElements(); ++e, nextIndex(idx, dims)) {
    uint64_t off = 0;
    for (size_t k = 0; k < rank; ++k)
      off += uint64_t(idx[k]) * st[size_t(perm[k])];
    r.data.push_back(d.data[off]);
  }
  return true;
}

bool Eval::matmul() {
  Value a = *in_[0], b = *in_[1];
  if (a.dims.empty() || b.dims.empty())
    return fail("scalar operand");
  bool vecA = a.dims.size() == 1, vecB = b.dims.size() == 1;
  if (vecA)
    a.dims.insert(a.dims.begin(), 1);
  if (vecB)
    b.dims.push_back(1);
  const int64_t m = a.dims[a.dims.size() - 2], k = a.dims.back(), n = b.dims.back();
  if (b.dims[b.dims.size() - 2] != k)
    return fail("inner dimensions differ (" + std::to_string(k) + " vs " +
                std::to_string(b.dims[b.dims.size() - 2]) + ")");
  Value ba = a, bb = b;
  ba.dims.resize(a.dims.size() - 2), bb.dims.resize(b.dims.size() - 2);
  std::vector<int64_t> batch;
  if (!broadcastDims({&ba, &bb}, batch))
    return fail("batch dimensions do not broadcast");
  std::vector<int64_t> dims = batch;
  if (!vecA) dims.push_back(m);
  if (!vecB) dims.push_back(n);
  Value &r = result(a.dtype, dims);
  if (!a.hasData || !b.hasData || r.numElements() * uint64_t(k) > kMaxInterpElements * 16)
    return true;
  r.hasData = true;
  std::vector<int64_t> idx(batch.size(), 0);
  uint64_t nb = 1;
  for (int64_t x : batch)
    nb *= uint64_t(x);
  for (uint64_t e = 0; e < nb; ++e, nextIndex(idx, batch)) {
    auto offOf = [&](const Value &v) {
      uint64_t off = 0, stride = uint64_t(v.dims[v.dims.size() - 2] * v.dims.back());
      for (size_t i = 0; i + 2 < v.dims.size(); ++i) {
        size_t vi = v.dims.size() - 3 - i, oi = batch.size() - 1 - i;
        if (v.dims[vi] != 1)
          off += uint64_t(idx[oi]) * stride;
        stride *= uint64_t(v.dims[vi]);
      }
      return off;
    };
    uint64_t oa = offOf(a), ob = offOf(b);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t x = 0; x < k; ++x)
          s += a.data[oa + uint64_t(i * k + x)] * b.data[ob + uint64_t(x * n + j)];
        r.data.push_back(roundTo(a.dtype, s));
      }
  }
  return true;
}

bool Eval::reduce() {
  const Value &d = *in_[0];
  std::vector<int64_t> axes;
  if (const Attribute *a = n_.attr("axes"))
    axes = a->ints;
  else if (input(1) && !intsOf(input(1), axes))
    return fail("axes must be known when kiln imports the graph");
  const size_t rank = d.dims.size();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    int64_t x = normAxis(a, rank);
    if (x < 0 || x >= int64_t(rank))
      return fail("axis out of range");
    reduced[size_t(x)] = true;
  }
  const bool keep = n_.intAttr("keepdims", 1) != 0;
  std::vector<int64_t> dims, keptDims;
  for (size_t i = 0; i < rank; ++i) {
    keptDims.push_back(reduced[i] ? 1 : d.dims[i]);
    if (!reduced[i] || keep)
      dims.push_back(reduced[i] ? 1 : d.dims[i]);
  }
  Value &r = result(d.dtype, dims);
  if (!d.hasData || d.numElements() > kMaxInterpElements)
    return true;
  const std::string &op = n_.opType;
  std::vector<double> acc(r.numElements(), op == "ReduceMax"   ? -INFINITY
                                           : op == "ReduceMin" ? INFINITY
                                           : op == "ReduceProd" ? 1
                                                               : 0);
  auto kst = stridesOf(keptDims);
  std::vector<int64_t> idx(rank, 0);
  for (uint64_t e = 0; e < d.data.size(); ++e, nextIndex(idx, d.dims)) {
    uint64_t o = 0;
    for (size_t k = 0; k < rank; ++k)
      o += reduced[k] ? 0 : uint64_t(idx[k]) * kst[k];
    double x = d.data[e];
    double &a = acc[o];
    a = op == "ReduceMax" ? std::max(a, x) : op == "ReduceMin" ? std::min(a, x)
        : op == "ReduceProd" ? a * x : op == "ReduceSumSquare" ? a + x * x : a + x;
  }
  uint64_t count = d.numElements() / std::max<uint64_t>(1, r.numElements());
  r.hasData = true;
  for (double &a : acc)
    a = roundTo(d.dtype, op == "ReduceMean" ? a / double(count) : a);
  r.data = std::move(acc);
  return true;
}

bool Eval::concat() {
  int64_t axis = normAxis(n_.intAttr("axis", 0), in_[0]->dims.size());
  if (axis < 0 || axis >= int64_t(in_[0]->dims.size()))
    return fail("axis out of range");
  std::vector<int64_t> dims = in_[0]->dims;
  dims[size_t(axis)] = 0;
  for (const Value *v : in_) {
    if (v->dims.size() != dims.size())
      return fail("operands differ in rank");
    dims[size_t(axis)] += v->dims[size_t(axis)];
  }
  Value &r = result(in_[0]->dtype, dims);
  if (!allData(in_) || r.numElements() > kMaxInterpElements)
    return true;
  uint64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= uint64_t(dims[size_t(i)]);
  r.hasData = true;
  for (uint64_t o = 0; o < outer; ++o)
    for (const Value *v : in_) {
      uint64_t chunk = v->numElements() / std::max<uint64_t>(outer, 1);
      r.data.insert(r.data.end(), v->data.begin() + long(o * chunk),
                    v->data.begin() + long((o + 1) * chunk));
    }
  return true;
}

bool Eval::trilu() {
  const Value &d = *in_[0];
  if (d.dims.size() < 2)
    return fail("needs a matrix");
  std::vector<int64_t> kv;
  int64_t k = intsOf(input(1), kv) && !kv.empty() ? kv[0] : 0;
  const bool upper = n_.intAttr("upper", 1) != 0;
  Value &r = result(d.dtype, d.dims);
  if (!d.hasData || d.numElements() > kMaxInterpElements || (input(1) && !input(1)->hasData))
    return true;
  r.hasData = true, r.data = d.data;
  const int64_t rows = d.dims[d.dims.size() - 2], cols = d.dims.back();
  for (uint64_t e = 0; e < r.data.size(); ++e) {
    int64_t j = int64_t(e % uint64_t(cols)), i = int64_t((e / uint64_t(cols)) % uint64_t(rows));
    if (upper ? j - i < k : j - i > k)
      r.data[e] = 0;
  }
  return true;
}

bool Eval::softmax() {
  const Value &d = *in_[0];
  int64_t axis = normAxis(n_.intAttr("axis", -1), d.dims.size());
  if (axis != int64_t(d.dims.size()) - 1)
    return fail("kiln evaluates Softmax over the last axis only");
  Value &r = result(d.dtype, d.dims);
  if (!d.hasData || d.numElements() > kMaxInterpElements)
    return true;
  r.hasData = true, r.data = d.data;
  const uint64_t len = uint64_t(d.dims.back());
  for (uint64_t o = 0; o + len <= r.data.size(); o += len) {
    double m = -INFINITY, s = 0;
    for (uint64_t i = 0; i < len; ++i)
      m = std::max(m, r.data[o + i]);
    for (uint64_t i = 0; i < len; ++i)
      s += (r.data[o + i] = std::exp(r.data[o + i] - m));
    for (uint64_t i = 0; i < len; ++i)
      r.data[o + i] = roundTo(d.dtype, r.data[o + i] / s);
  }
  return true;
}

bool Eval::run() {
  const std::string &op = n_.opType;
  if (!n_.domain.empty())
    return fail("ops of domain '" + n_.domain + "' are not supported by kiln's ONNX importer");
  size_t needed = op == "Where" ? 3 : (op == "Range" ? 3 : 0);
  if (in_.size() < needed)
    return fail("missing inputs");
  auto need = [&](size_t k) {
    for (size_t i = 0; i < k; ++i)
      if (!input(i))
        return false;
    return true;
  };
  auto binary = [&](std::function<double(double, double)> f, bool cmp = false) {
    if (!need(2))
      return fail("needs two inputs");
    return elementwise(cmp ? DType::Bool : in_[0]->dtype,
                       [&](const std::vector<double> &x) { return f(x[0], x[1]); });
  };
  if (op == "Constant") {
    const Attribute *a = n_.attr("value");
    Value &r = result(DType::Float, {});
    if (a && a->kind == Attribute::TensorValue) {
      r = Value::fromTensor(a->t, UINT64_MAX);
    } else if ((a = n_.attr("value_float"))) {
      r.hasData = true, r.data = {a->f};
    } else if ((a = n_.attr("value_int"))) {
      r.dtype = DType::Int64, r.hasData = true, r.data = {double(a->i)};
    } else if ((a = n_.attr("value_ints"))) {
      r.dtype = DType::Int64, r.dims = {int64_t(a->ints.size())}, r.hasData = true;
      r.data.assign(a->ints.begin(), a->ints.end());
    } else if ((a = n_.attr("value_floats"))) {
      r.dims = {int64_t(a->floats.size())}, r.hasData = true;
      r.data.assign(a->floats.begin(), a->floats.end());
    } else {
      return fail("has no value kiln reads");
    }
    return true;
  }
  if (in_.empty() || !input(0))
    return fail("missing its first input");
  const Value &x = *in_[0];
  if (op == "Identity") { out_ = {x}; return true; }
  if (op == "Cast") {
    DType to = DType(n_.intAttr("to", 0));
    if (dtypeSize(to) == 0)
      return fail("casts to an element type kiln does not read");
    return elementwise(to, [](const std::vector<double> &v) { return v[0]; });
  }
  if (op == "Neg") return unary([](double v) { return -v; });
  if (op == "Sqrt") return unary([](double v) { return std::sqrt(v); });
  if (op == "Reciprocal") return unary([](double v) { return 1 / v; });
  if (op == "Exp") return unary([](double v) { return std::exp(v); });
  if (op == "Cos") return unary([](double v) { return std::cos(v); });
  if (op == "Sin") return unary([](double v) { return std::sin(v); });
  if (op == "Abs") return unary([](double v) { return std::fabs(v); });
  if (op == "Floor") return unary([](double v) { return std::floor(v); });
  if (op == "Ceil") return unary([](double v) { return std::ceil(v); });
  if (op == "Relu") return unary([](double v) { return v > 0 ? v : 0; });
  if (op == "Sigmoid") return unary([](double v) { return 1 / (1 + std::exp(-v)); });
  if (op == "Tanh") return unary([](double v) { return std::tanh(v); });
  if (op == "Not") return unary([](double v) { return v == 0 ? 1 : 0; });
  if (op == "IsInf") return elementwise(DType::Bool, [](const std::vector<double> &v) { return std::isinf(v[0]) ? 1 : 0; });
  if (op == "Add") return binary([](double a, double b) { return a + b; });
  if (op == "Sub") return binary([](double a, double b) { return a - b; });
  if (op == "Mul") return binary([](double a, double b) { return a * b; });
  if (op == "Div") return binary([&](double a, double b) {
    return isFloat(x.dtype) ? a / b : (b == 0 ? 0 : std::trunc(a / b)); });
  if (op == "Pow") return binary([](double a, double b) { return std::pow(a, b); });
  if (op == "Mod") return binary([&](double a, double b) {
    if (b == 0) return 0.0;
    if (n_.intAttr("fmod", 0)) return std::fmod(a, b);
    double m = std::fmod(a, b); return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; });
  if (op == "Min") return binary([](double a, double b) { return std::min(a, b); });
  if (op == "Max") return binary([](double a, double b) { return std::max(a, b); });
  if (op == "Equal") return binary([](double a, double b) { return a == b ? 1 : 0; }, true);
  if (op == "Less") return binary([](double a, double b) { return a < b ? 1 : 0; }, true);
  if (op == "Greater") return binary([](double a, double b) { return a > b ? 1 : 0; }, true);
  if (op == "LessOrEqual") return binary([](double a, double b) { return a <= b ? 1 : 0; }, true);
  if (op == "GreaterOrEqual") return binary([](double a, double b) { return a >= b ? 1 : 0; }, true);
  if (op == "And") return binary([](double a, double b) { return a != 0 && b != 0 ? 1 : 0; }, true);
  if (op == "Or") return binary([](double a, double b) { return a != 0 || b != 0 ? 1 : 0; }, true);
  if (op == "Where") {
    if (!need(3))
      return fail("needs three inputs");
    return elementwise(in_[1]->dtype, [](const std::vector<double> &v) {
      return v[0] != 0 ? v[1] : v[2]; });
  }
  if (op == "Shape") {
    int64_t rank = int64_t(x.dims.size());
    int64_t s = normAxis(n_.intAttr("start", 0), size_t(rank));
    int64_t e = n_.attr("end") ? normAxis(n_.intAttr("end", rank), size_t(rank)) : rank;
    s = std::clamp<int64_t>(s, 0, rank), e = std::clamp<int64_t>(e, s, rank);
    Value &r = result(DType::Int64, {e - s});
    r.hasData = true;
    r.data.assign(x.dims.begin() + s, x.dims.begin() + e);
    return true;
  }
  if (op == "Size") {
    Value &r = result(DType::Int64, {});
    r.hasData = true, r.data = {double(x.numElements())};
    return true;
  }
  if (op == "Gather") return need(2) ? gather() : fail("needs indices");
  if (op == "Slice") return slice();
  if (op == "Reshape") return reshape();
  if (op == "Transpose") return transpose();
  if (op == "MatMul") return need(2) ? matmul() : fail("needs two inputs");
  if (op == "Concat") return concat();
  if (op == "Trilu") return trilu();
  if (op == "Softmax") return softmax();
  if (op.rfind("Reduce", 0) == 0) return reduce();
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> axes;
    if (const Attribute *a = n_.attr("axes"))
      axes = a->ints;
    else if (input(1) && !intsOf(input(1), axes))
      return fail("axes must be known when kiln imports the graph");
    std::vector<int64_t> dims;
    if (op == "Unsqueeze") {
      size_t rank = x.dims.size() + axes.size();
      std::vector<bool> ins(rank, false);
      for (int64_t a : axes) {
        int64_t k = normAxis(a, rank);
        if (k < 0 || k >= int64_t(rank))
          return fail("axis out of range");
        ins[size_t(k)] = true;
      }
      for (size_t i = 0, j = 0; i < rank; ++i)
        dims.push_back(ins[i] ? 1 : x.dims[j++]);
    } else {
      for (size_t i = 0; i < x.dims.size(); ++i) {
        bool drop = axes.empty() ? x.dims[i] == 1 : false;
        for (int64_t a : axes)
          drop |= normAxis(a, x.dims.size()) == int64_t(i);
        if (drop && x.dims[i] != 1)
          return fail("squeezes a dimension of size " + std::to_string(x.dims[i]));
        if (!drop)
          dims.push_back(x.dims[i]);
      }
    }
    Value &r = result(x.dtype, dims);
    r.hasData = x.hasData, r.data = x.data;
    return true;
  }
  if (op == "Expand") {
    std::vector<int64_t> shape;
    if (!intsOf(input(1), shape))
      return fail("the target shape must be known when kiln imports the graph");
    Value s;
    s.dims = shape;
    std::vector<int64_t> dims;
    const Value *pair[] = {&x, &s};
    if (!broadcastDims({pair[0], pair[1]}, dims))
      return fail("shapes do not broadcast");
    Value &r = result(x.dtype, dims);
    if (!x.hasData || r.numElements() > kMaxInterpElements)
      return true;
    r.hasData = true;
    std::vector<int64_t> idx(dims.size(), 0);
    for (uint64_t e = 0; e < r.numElements(); ++e, nextIndex(idx, dims))
      r.data.push_back(broadcastAt(x, dims, idx));
    return true;
  }
  if (op == "ConstantOfShape") {
    std::vector<int64_t> shape;
    if (!intsOf(&x, shape))
      return fail("the shape must be known when kiln imports the graph");
    Value fill;
    fill.dtype = DType::Float, fill.hasData = true, fill.data = {0};
    if (const Attribute *a = n_.attr("value"); a && a->kind == Attribute::TensorValue)
      fill = Value::fromTensor(a->t, 1);
    Value &r = result(fill.dtype, shape);
    if (r.numElements() <= kMaxInterpElements && !fill.data.empty())
      r.hasData = true, r.data.assign(r.numElements(), fill.data[0]);
    return true;
  }
  if (op == "Range") {
    if (!need(3) || !allData(in_))
      return fail("start, limit and delta must be known when kiln imports the graph");
    double s = in_[0]->data.at(0), l = in_[1]->data.at(0), d = in_[2]->data.at(0);
    if (d == 0)
      return fail("delta is 0");
    int64_t n = std::max<int64_t>(0, int64_t(std::ceil((l - s) / d)));
    if (uint64_t(n) > kMaxInterpElements)
      return fail("range of " + std::to_string(n) + " elements is too long to evaluate");
    Value &r = result(x.dtype, {n});
    r.hasData = true;
    for (int64_t i = 0; i < n; ++i)
      r.data.push_back(roundTo(x.dtype, s + double(i) * d));
    return true;
  }
  if (op == "ScatterND") { // Hugging Face's padding mask writes into the causal mask with it
    if (!need(3))
      return fail("needs data, indices and updates");
    const Value &ix = *in_[1], &up = *in_[2];
    Value &r = result(x.dtype, x.dims);
    if (n_.attr("reduction") && n_.attr("reduction")->s != "none")
      return fail("reductions are not supported");
    if (!x.hasData || !ix.hasData || !up.hasData || ix.dims.empty())
      return true;
    const size_t k = size_t(ix.dims.back());
    if (k == 0 || k > x.dims.size())
      return fail("index tuples longer than the data's rank");
    uint64_t slice = 1;
    for (size_t i = k; i < x.dims.size(); ++i)
      slice *= uint64_t(x.dims[i]);
    auto st = stridesOf(x.dims);
    r.hasData = true, r.data = x.data;
    const uint64_t tuples = ix.numElements() / k;
    if (up.numElements() != tuples * slice)
      return fail("updates do not match the indices");
    for (uint64_t t = 0; t < tuples; ++t) {
      uint64_t off = 0;
      for (size_t j = 0; j < k; ++j) {
        int64_t v = toInt(ix.data[t * k + j]);
        if (v < 0)
          v += x.dims[j];
        if (v < 0 || v >= x.dims[j])
          return fail("index out of range");
        off += uint64_t(v) * st[j];
      }
      for (uint64_t e = 0; e < slice; ++e)
        r.data[off + e] = up.data[t * slice + e];
    }
    return true;
  }
  if (op == "Gemm") {
    if (!need(2))
      return fail("needs two inputs");
    const Value &b = *in_[1];
    if (x.dims.size() != 2 || b.dims.size() != 2)
      return fail("operands must be matrices");
    int64_t m = n_.intAttr("transA", 0) ? x.dims[1] : x.dims[0];
    int64_t n = n_.intAttr("transB", 0) ? b.dims[0] : b.dims[1];
    result(x.dtype, {m, n}); // never folded: Gemm reads weights
    return true;
  }
  return fail("op '" + op + "' is not supported by kiln's ONNX importer");
}

} // namespace

bool evalNode(const Node &n, const std::vector<const Value *> &in, std::vector<Value> &out,
              std::string &error) {
  out.clear();
  if (!Eval(n, in, out, error).run())
    return false;
  for (const Value &v : out) { // negative or absurd sizes from malformed shape inputs
    uint64_t elems = 1;
    for (int64_t d : v.dims) {
      if (d < 0 || (d > 0 && elems > (uint64_t(1) << 40) / uint64_t(d))) {
        error = n.describe() + ": computes a tensor with an invalid shape";
        return false;
      }
      elems *= uint64_t(d);
    }
  }
  return true;
}

bool probeGraph(const Graph &g, const std::map<std::string, int64_t> &bindings,
                const std::map<std::string, Value> &inputData, std::map<std::string, Value> &values,
                std::string &error) {
  values.clear();
  for (const auto &[name, t] : g.initializers)
    values[name] = Value::fromTensor(t, t.dims.size() >= 2 && t.numElements() > kMaxProbeTable
                                            ? 0 // a weight matrix: its shape is enough
                                            : kMaxInterpElements);
  for (const ValueInfo &in : g.inputs) {
    auto given = inputData.find(in.name);
    if (given != inputData.end()) {
      values[in.name] = given->second;
      continue;
    }
    Value v;
    v.dtype = in.dtype;
    for (const Dim &d : in.shape) {
      if (d.known()) {
        v.dims.push_back(d.value);
        continue;
      }
      auto b = bindings.find(d.symbol);
      if (b == bindings.end()) {
        error = "graph input '" + in.name + "' has dimension '" + d.symbol +
                "', which kiln cannot bind";
        return false;
      }
      v.dims.push_back(b->second);
    }
    values[in.name] = v;
  }
  Value absent;
  for (const Node &n : g.nodes) {
    std::vector<const Value *> in;
    for (const std::string &name : n.inputs) {
      if (name.empty()) {
        in.push_back(&absent);
        continue;
      }
      auto it = values.find(name);
      if (it == values.end()) {
        error = n.describe() + ": input '" + name + "' has no shape";
        return false;
      }
      in.push_back(&it->second);
    }
    std::vector<Value> out;
    if (!evalNode(n, in, out, error))
      return false;
    for (size_t i = 0; i < n.outputs.size() && i < out.size(); ++i)
      if (!n.outputs[i].empty())
        values[n.outputs[i]] = std::move(out[i]);
  }
  return true;
}

} // namespace kiln::onnx
