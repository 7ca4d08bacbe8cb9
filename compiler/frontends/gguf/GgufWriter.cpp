//===- GgufWriter.cpp - GGUF v3 writer -----------------------------------===//
#include "compiler/frontends/gguf/GgufWriter.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the GGUF writer memcpy's little-endian fields");

namespace kiln::gguf {
namespace {

// resize + memcpy rather than vector::insert: GCC 12 warns falsely (-Wstringop-overflow)
// on inserting into a vector that has just been grown.
void append(std::vector<uint8_t> &out, const void *p, size_t n) {
  if (n == 0)
    return;
  size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}

template <typename T> void put(std::vector<uint8_t> &out, T v) { append(out, &v, sizeof(T)); }

void putString(std::vector<uint8_t> &out, const std::string &s) {
  put<uint64_t>(out, s.size());
  append(out, s.data(), s.size());
}

void padTo(std::vector<uint8_t> &out, uint64_t alignment) {
  if (alignment > 1)
    out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
}

// Encodes v's payload as `type` (the type id itself is written by the caller).
void encode(std::vector<uint8_t> &out, ValueType type, const Value &v) {
  switch (type) {
  case ValueType::U8: put<uint8_t>(out, static_cast<uint8_t>(v.u)); break;
  case ValueType::I8: put<int8_t>(out, static_cast<int8_t>(v.i)); break;
  case ValueType::U16: put<uint16_t>(out, static_cast<uint16_t>(v.u)); break;
  case ValueType::I16: put<int16_t>(out, static_cast<int16_t>(v.i)); break;
  case ValueType::U32: put<uint32_t>(out, static_cast<uint32_t>(v.u)); break;
  case ValueType::I32: put<int32_t>(out, static_cast<int32_t>(v.i)); break;
  case ValueType::U64: put<uint64_t>(out, v.u); break;
  case ValueType::I64: put<int64_t>(out, v.i); break;
  case ValueType::F32: put<float>(out, static_cast<float>(v.f)); break;
  case ValueType::F64: put<double>(out, v.f); break;
  case ValueType::Bool: put<uint8_t>(out, v.u ? 1 : 0); break;
  case ValueType::String: putString(out, v.str); break;
  case ValueType::Array:
    put<uint32_t>(out, static_cast<uint32_t>(v.elemType));
    put<uint64_t>(out, v.array.size());
    for (const Value &e : v.array)
      encode(out, v.elemType, e);
    break;
  }
}

} // namespace

Value makeU8(uint8_t v) { Value r; r.type = ValueType::U8; r.u = v; return r; }
Value makeI8(int8_t v) { Value r; r.type = ValueType::I8; r.i = v; return r; }
Value makeU16(uint16_t v) { Value r; r.type = ValueType::U16; r.u = v; return r; }
Value makeI16(int16_t v) { Value r; r.type = ValueType::I16; r.i = v; return r; }
Value makeU32(uint32_t v) { Value r; r.type = ValueType::U32; r.u = v; return r; }
Value makeI32(int32_t v) { Value r; r.type = ValueType::I32; r.i = v; return r; }
Value makeU64(uint64_t v) { Value r; r.type = ValueType::U64; r.u = v; return r; }
Value makeI64(int64_t v) { Value r; r.type = ValueType::I64; r.i = v; return r; }
Value makeF32(float v) { Value r; r.type = ValueType::F32; r.f = v; return r; }
Value makeF64(double v) { Value r; r.type = ValueType::F64; r.f = v; return r; }
Value makeBool(bool v) { Value r; r.type = ValueType::Bool; r.u = v ? 1 : 0; return r; }

Value makeString(std::string v) {
  Value r;
  r.type = ValueType::String;
  r.str = std::move(v);
  return r;
}

Value makeArray(ValueType elemType, std::vector<Value> elems) {
  Value r;
  r.type = ValueType::Array;
  r.elemType = elemType;
  r.array = std::move(elems);
  return r;
}

void GgufWriter::add(const std::string &key, const Value &v) {
  Kv kv{key, static_cast<uint32_t>(v.type), {}};
  encode(kv.payload, v.type, v);
  hasAlignmentKey_ |= key == "general.alignment";
  kvs_.push_back(std::move(kv));
}

void GgufWriter::addRaw(const std::string &key, uint32_t typeId,
                        const std::vector<uint8_t> &payload) {
  hasAlignmentKey_ |= key == "general.alignment";
  kvs_.push_back(Kv{key, typeId, payload});
}

void GgufWriter::addStringArray(const std::string &key, const std::vector<std::string> &v) {
  std::vector<Value> e;
  for (const std::string &s : v)
    e.push_back(makeString(s));
  add(key, makeArray(ValueType::String, std::move(e)));
}

void GgufWriter::addF32Array(const std::string &key, const std::vector<float> &v) {
  std::vector<Value> e;
  for (float x : v)
    e.push_back(makeF32(x));
  add(key, makeArray(ValueType::F32, std::move(e)));
}

void GgufWriter::addI32Array(const std::string &key, const std::vector<int32_t> &v) {
  std::vector<Value> e;
  for (int32_t x : v)
    e.push_back(makeI32(x));
  add(key, makeArray(ValueType::I32, std::move(e)));
}

void GgufWriter::addTensor(const std::string &name, uint32_t ggmlType,
                           const std::vector<uint64_t> &dims, const void *data, size_t nbytes) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  tensors_.push_back(Tensor{name, ggmlType, dims, nbytes, std::vector<uint8_t>(p, p + nbytes), {}});
}

void GgufWriter::addTensorFill(const std::string &name, uint32_t ggmlType,
                               const std::vector<uint64_t> &dims, size_t nbytes, Fill fill) {
  tensors_.push_back(Tensor{name, ggmlType, dims, nbytes, {}, std::move(fill)});
}

std::vector<uint8_t> GgufWriter::header() const {
  bool writeAlignment = alignment_ != 32 && !hasAlignmentKey_;
  std::vector<uint8_t> out;
  append(out, "GGUF", 4);
  put<uint32_t>(out, version_);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kvs_.size() + (writeAlignment ? 1 : 0));
  if (writeAlignment) {
    putString(out, "general.alignment");
    put<uint32_t>(out, static_cast<uint32_t>(ValueType::U32));
    put<uint32_t>(out, alignment_);
  }
  for (const Kv &kv : kvs_) {
    putString(out, kv.key);
    put<uint32_t>(out, kv.type);
    append(out, kv.payload.data(), kv.payload.size());
  }
  uint64_t offset = 0; // relative to the data section, each tensor padded like ggml does
  for (const Tensor &t : tensors_) {
    putString(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims)
      put<uint64_t>(out, d);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, offset);
    offset += t.nbytes;
    if (alignment_ > 1)
      offset = (offset + alignment_ - 1) / alignment_ * alignment_;
  }
  if (!tensors_.empty())
    padTo(out, alignment_);
  return out;
}

const std::vector<uint8_t> &GgufWriter::tensorBytes(const Tensor &t,
                                                    std::vector<uint8_t> &scratch) const {
  if (!t.fill)
    return t.bytes;
  scratch.assign(t.nbytes, 0);
  t.fill(scratch.data());
  return scratch;
}

std::vector<uint8_t> GgufWriter::toBytes() const {
  std::vector<uint8_t> out = header();
  std::vector<uint8_t> scratch;
  for (const Tensor &t : tensors_) {
    const std::vector<uint8_t> &bytes = tensorBytes(t, scratch);
    append(out, bytes.data(), bytes.size());
    padTo(out, alignment_);
  }
  return out;
}

bool GgufWriter::writeFile(const std::string &path, std::string &error) const {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = "cannot create '" + path + "': " + std::strerror(errno);
    return false;
  }
  // One tensor in memory at a time; the padding after each is the zeros GGUF asks for.
  std::vector<uint8_t> chunk = header(), scratch;
  bool ok = std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size();
  uint64_t written = chunk.size();
  for (const Tensor &t : tensors_) {
    if (!ok)
      break;
    const std::vector<uint8_t> &bytes = tensorBytes(t, scratch);
    ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    written += bytes.size();
    const uint64_t pad = alignment_ > 1 ? (alignment_ - written % alignment_) % alignment_ : 0;
    static const uint8_t zeros[256] = {};
    for (uint64_t left = pad; ok && left > 0;) {
      const size_t n = size_t(std::min<uint64_t>(left, sizeof zeros));
      ok = std::fwrite(zeros, 1, n, f) == n;
      left -= n;
      written += n;
    }
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok)
    error = "cannot write '" + path + "': " + std::strerror(errno);
  return ok;
}

} // namespace kiln::gguf
