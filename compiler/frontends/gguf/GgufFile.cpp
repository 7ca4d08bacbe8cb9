//===- GgufFile.cpp - GGUF v2/v3 reader ----------------------------------===//
//
// Checks follow ggml's src/gguf.cpp: every count, length and offset is compared with the
// bytes left before it is used, so no input can make the reader read out of bounds or
// allocate more than a small multiple of the file size.
//===----------------------------------------------------------------------===//
#include "compiler/frontends/gguf/GgufFile.h"

#include "kiln/quant.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <limits>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the GGUF reader memcpy's little-endian fields");

namespace kiln::gguf {
namespace {

constexpr uint32_t kMaxArrayDepth = 8;
// Total metadata array elements per file; a Value is ~100 bytes, so this caps the
// metadata at well under 1 GiB even for a multi-gigabyte file. Real vocabularies
// (tokens + scores + types + merges) stay below ~1M.
constexpr uint64_t kMaxMetadataElements = 1ull << 23;
constexpr uint32_t kMaxDims = 4;
// Smallest possible encodings: key (u64 len + 1 byte) + u32 type + 1-byte value, and
// name (u64 len + 1 byte) + u32 n_dims + one u64 dim + u32 type + u64 offset.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

// A valid address for empty inputs, so no offset is ever applied to a null pointer.
const uint8_t kEmpty[1] = {0};

std::string num(uint64_t v) { return std::to_string(v); }

// Quotes a name taken from the file: escapes anything that is not printable ASCII (the
// message must stay one line) and shortens long names.
std::string quote(const std::string &s) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 80) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "'";
}

bool knownType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

// Bytes of a scalar of type t; 0 for string, array and unknown ids.
uint64_t scalarSize(uint32_t t) {
  switch (static_cast<ValueType>(t)) {
  case ValueType::U8: case ValueType::I8: case ValueType::Bool: return 1;
  case ValueType::U16: case ValueType::I16: return 2;
  case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
  case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
  default: return 0;
  }
}

// Smallest encoding of one element of type t (t known): bounds array counts.
uint64_t minEncodedSize(uint32_t t) {
  if (t == static_cast<uint32_t>(ValueType::String))
    return 8;
  if (t == static_cast<uint32_t>(ValueType::Array))
    return 4 + 8;
  return scalarSize(t);
}

// Bounds-checked cursor. `ctx_` names what is being read ("metadata key 'x'") and is
// only turned into a message on failure.
class Reader {
public:
  Reader(const uint8_t *p, size_t n, size_t pos = 0) : p_(p), n_(n), pos_(pos) {}
  size_t pos() const { return pos_; }
  uint64_t left() const { return n_ - pos_; }
  const std::string &ctx() const { return ctx_; }
  void setCtx(std::string c) { ctx_ = std::move(c); }

  bool fail(std::string msg) {
    err = std::move(msg);
    return false;
  }
  bool need(uint64_t n, const char *what) {
    if (n <= left())
      return true;
    return fail("truncated file: " + ctx_ + what + " needs " + num(n) + " bytes at offset " +
                num(pos_) + " but only " + num(left()) + " remain");
  }
  template <typename T> bool read(T &out, const char *what) {
    if (!need(sizeof(T), what))
      return false;
    std::memcpy(&out, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool readString(std::string &out, const char *what) {
    size_t at = pos_;
    uint64_t len = 0;
    if (!read(len, what))
      return false;
    if (len > left())
      return fail("string length " + num(len) + " of " + ctx_ + what + " at offset " + num(at) +
                  " exceeds the " + num(left()) + " bytes left (corrupt length or truncated file)");
    out.assign(reinterpret_cast<const char *>(p_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return true;
  }

  std::string err;

private:
  const uint8_t *p_;
  size_t n_;
  size_t pos_;
  std::string ctx_;
};

// Reads one value of type `type` (whose id was at `typeAt`). `depth` counts the
// enclosing arrays; `budget` is the number of array elements still allowed.
bool readValue(Reader &r, uint32_t type, size_t typeAt, uint32_t depth, Value &v,
               uint64_t &budget) {
  if (!knownType(type))
    return r.fail("unknown value type " + num(type) + " for " + r.ctx() + " at offset " +
                  num(typeAt));
  v.type = static_cast<ValueType>(type);
  switch (v.type) {
  case ValueType::U8: { uint8_t x; if (!r.read(x, " value")) return false; v.u = x; return true; }
  case ValueType::U16: { uint16_t x; if (!r.read(x, " value")) return false; v.u = x; return true; }
  case ValueType::U32: { uint32_t x; if (!r.read(x, " value")) return false; v.u = x; return true; }
  case ValueType::U64: { uint64_t x; if (!r.read(x, " value")) return false; v.u = x; return true; }
  case ValueType::I8: { int8_t x; if (!r.read(x, " value")) return false; v.i = x; return true; }
  case ValueType::I16: { int16_t x; if (!r.read(x, " value")) return false; v.i = x; return true; }
  case ValueType::I32: { int32_t x; if (!r.read(x, " value")) return false; v.i = x; return true; }
  case ValueType::I64: { int64_t x; if (!r.read(x, " value")) return false; v.i = x; return true; }
  case ValueType::F32: { float x; if (!r.read(x, " value")) return false; v.f = x; return true; }
  case ValueType::F64: { double x; if (!r.read(x, " value")) return false; v.f = x; return true; }
  case ValueType::Bool: {
    // Read as a byte: loading anything but 0/1 into a C++ bool is undefined.
    size_t at = r.pos();
    uint8_t x;
    if (!r.read(x, " value"))
      return false;
    if (x > 1)
      return r.fail("bad bool value " + num(x) + " for " + r.ctx() + " at offset " + num(at) +
                    " (must be 0 or 1)");
    v.u = x;
    return true;
  }
  case ValueType::String:
    return r.readString(v.str, " value");
  case ValueType::Array:
    break;
  }

  if (depth >= kMaxArrayDepth)
    return r.fail("arrays nested deeper than " + num(kMaxArrayDepth) + " levels in " + r.ctx() +
                  " at offset " + num(r.pos()));
  size_t elemAt = r.pos();
  uint32_t elemType;
  if (!r.read(elemType, " array element type"))
    return false;
  if (!knownType(elemType))
    return r.fail("unknown array element type " + num(elemType) + " for " + r.ctx() +
                  " at offset " + num(elemAt));
  size_t countAt = r.pos();
  uint64_t count;
  if (!r.read(count, " array count"))
    return false;
  uint64_t minSize = minEncodedSize(elemType);
  if (count > r.left() / minSize)
    return r.fail("array count " + num(count) + " of " + r.ctx() + " at offset " + num(countAt) +
                  " is too large: each " + valueTypeName(static_cast<ValueType>(elemType)) +
                  " element needs at least " + num(minSize) + " bytes and only " +
                  num(r.left()) + " remain");
  if (count > budget)
    return r.fail("too many metadata array elements: " + r.ctx() + " at offset " +
                  num(countAt) + " brings the total past " + num(kMaxMetadataElements));
  budget -= count;
  v.elemType = static_cast<ValueType>(elemType);
  v.array.resize(static_cast<size_t>(count));
  for (Value &e : v.array)
    if (!readValue(r, elemType, elemAt, depth + 1, e, budget))
      return false;
  return true;
}

} // namespace

const char *valueTypeName(ValueType t) {
  switch (t) {
  case ValueType::U8: return "u8";
  case ValueType::I8: return "i8";
  case ValueType::U16: return "u16";
  case ValueType::I16: return "i16";
  case ValueType::U32: return "u32";
  case ValueType::I32: return "i32";
  case ValueType::F32: return "f32";
  case ValueType::Bool: return "bool";
  case ValueType::String: return "string";
  case ValueType::Array: return "array";
  case ValueType::U64: return "u64";
  case ValueType::I64: return "i64";
  case ValueType::F64: return "f64";
  }
  return "unknown";
}

uint64_t TensorInfo::numElements() const {
  uint64_t n = 1;
  for (uint64_t d : dims)
    n *= d; // checked against overflow when the file was parsed
  return n;
}

GgufFile::~GgufFile() {
  if (mapping_)
    ::munmap(mapping_, size_);
}

const Value *GgufFile::find(const std::string &key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const TensorInfo *GgufFile::findTensor(const std::string &name) const {
  auto it = tensorIndex_.find(name);
  return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t *bytes, size_t size,
                                          std::string &error) {
  std::unique_ptr<GgufFile> f(new (std::nothrow) GgufFile());
  if (!f) {
    error = "out of memory";
    return nullptr;
  }
  f->base_ = (bytes && size) ? bytes : kEmpty;
  f->size_ = (bytes && size) ? size : 0;
  if (!f->parseImpl(error))
    return nullptr;
  return f;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string &path, std::string &error) {
  struct Fd { // closes on every path; the mapping keeps the file alive after that
    int fd;
    ~Fd() { if (fd >= 0) ::close(fd); }
  };
  std::unique_ptr<GgufFile> f(new (std::nothrow) GgufFile());
  if (!f) {
    error = "out of memory";
    return nullptr;
  }
  try { // only the error messages below can throw (out of memory)
    Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) {
      error = "cannot open " + quote(path) + ": " + std::strerror(errno);
      return nullptr;
    }
    struct stat st;
    if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      error = "not a regular file: " + quote(path);
      return nullptr;
    }
    f->base_ = kEmpty;
    if (st.st_size > 0) { // mmap rejects length 0; an empty file fails as truncated below
      void *m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE,
                       fd.fd, 0);
      if (m == MAP_FAILED) {
        error = "cannot map " + quote(path) + ": " + std::strerror(errno);
        return nullptr;
      }
      f->mapping_ = m;
      f->base_ = static_cast<const uint8_t *>(m);
      f->size_ = static_cast<size_t>(st.st_size);
    }
  } catch (const std::exception &) {
    error = "out of memory";
    return nullptr;
  }
  if (!f->parseImpl(error))
    return nullptr;
  return f;
}

bool GgufFile::parseImpl(std::string &error) {
  // Nothing below throws on purpose, but allocation can; no exception may escape.
  try {
    if (parseHeaderAndMetadata(error) && parseTensorInfos(error))
      return true;
  } catch (const std::bad_alloc &) {
    error = "out of memory while reading GGUF metadata";
  } catch (const std::exception &e) {
    error = std::string("internal error while reading GGUF: ") + e.what();
  }
  return false; // the caller discards the half-filled object
}

bool GgufFile::parseHeaderAndMetadata(std::string &error) {
  Reader r(base_, size_);
  auto fail = [&]() { error = r.err; return false; };
  r.setCtx("header");
  uint32_t magic, version;
  if (!r.read(magic, " magic"))
    return fail();
  if (std::memcmp(base_, "GGUF", 4) != 0) {
    std::string m(reinterpret_cast<const char *>(base_), 4);
    error = "bad magic " + quote(m) + " (expected 'GGUF')";
    return false;
  }
  if (!r.read(version, " version"))
    return fail();
  if (version != 2 && version != 3) {
    error = "unsupported GGUF version " + num(version) + " (kiln reads 2 and 3)";
    if (version == 1)
      error += "; version 1 is obsolete, re-convert the model";
    else if (version == 0x02000000u || version == 0x03000000u)
      error += "; the file looks like a big-endian version " + num(version >> 24) +
               " file, which kiln does not read";
    return false;
  }
  version_ = version;
  uint64_t nTensors, nKv;
  if (!r.read(nTensors, " n_tensors") || !r.read(nKv, " n_kv"))
    return fail();
  // Reject counts whose smallest encoding does not fit in the file (corrupt headers), so
  // that tensors_.reserve() stays within a few times the file size. Anything subtler is
  // left to the loops below, which stop at the first short read and name the spot.
  if (nKv > r.left() / kMinKvBytes) {
    error = "header n_kv " + num(nKv) + " is too large: each metadata entry needs at least " +
            num(kMinKvBytes) + " bytes and only " + num(r.left()) +
            " follow the header (corrupt count or truncated file)";
    return false;
  }
  if (nTensors > r.left() / kMinTensorInfoBytes) {
    error = "header n_tensors " + num(nTensors) + " is too large: each tensor info needs at least " +
            num(kMinTensorInfoBytes) + " bytes and only " + num(r.left()) +
            " follow the header (corrupt count or truncated file)";
    return false;
  }
  nTensors_ = nTensors;

  uint64_t budget = kMaxMetadataElements;
  for (uint64_t i = 0; i < nKv; ++i) {
    r.setCtx("metadata entry #" + num(i));
    size_t keyAt = r.pos();
    std::string key;
    if (!r.readString(key, " key"))
      return fail();
    if (key.empty()) {
      error = "empty metadata key in entry #" + num(i) + " at offset " + num(keyAt);
      return false;
    }
    if (kv_.count(key)) {
      error = "duplicate metadata key " + quote(key) + " at offset " + num(keyAt);
      return false;
    }
    r.setCtx("metadata key " + quote(key));
    size_t typeAt = r.pos();
    uint32_t type;
    Value v;
    if (!r.read(type, " value type") || !readValue(r, type, typeAt, 0, v, budget))
      return fail();
    kv_.emplace(std::move(key), std::move(v));
  }
  metadataEnd_ = r.pos();

  if (const Value *a = find("general.alignment")) {
    if (a->type != ValueType::U32) {
      error = std::string("general.alignment has type ") + valueTypeName(a->type) +
              " (must be u32)";
      return false;
    }
    if (a->u == 0 || (a->u & (a->u - 1)) != 0) {
      error = "bad general.alignment " + num(a->u) + " (must be a nonzero power of two)";
      return false;
    }
    alignment_ = a->u;
  }
  return true;
}

bool GgufFile::parseTensorInfos(std::string &error) {
  Reader r(base_, size_, metadataEnd_);
  auto fail = [&](std::string msg) { error = std::move(msg); return false; };
  tensors_.reserve(static_cast<size_t>(nTensors_)); // bounded by the bytes left
  for (uint64_t i = 0; i < nTensors_; ++i) {
    TensorInfo t;
    r.setCtx("tensor info #" + num(i));
    size_t nameAt = r.pos();
    if (!r.readString(t.name, " name"))
      return fail(r.err);
    if (t.name.empty())
      return fail("empty tensor name in tensor info #" + num(i) + " at offset " + num(nameAt));
    if (tensorIndex_.count(t.name))
      return fail("duplicate tensor name " + quote(t.name) + " at offset " + num(nameAt));
    const std::string what = "tensor " + quote(t.name);
    r.setCtx(what);

    size_t dimsAt = r.pos();
    uint32_t nDims;
    if (!r.read(nDims, " n_dims"))
      return fail(r.err);
    if (nDims < 1 || nDims > kMaxDims)
      return fail(what + " has n_dims " + num(nDims) + " at offset " + num(dimsAt) +
                  " (kiln reads 1 to " + num(kMaxDims) + ")");
    t.dims.resize(nDims);
    for (uint64_t &d : t.dims)
      if (!r.read(d, " dims"))
        return fail(r.err);
    // ggml keeps element counts in int64_t; rows = product of all dims but the first.
    uint64_t rows = 1, elems = 1;
    for (uint32_t d = 0; d < nDims; ++d) {
      if (t.dims[d] == 0)
        return fail(what + " dimension " + num(d) + " is 0 (every dimension must be at least 1)");
      if (t.dims[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elems)
        return fail(what + " element count overflows: dimension " + num(d) + " is " +
                    num(t.dims[d]));
      elems *= t.dims[d];
      if (d > 0)
        rows *= t.dims[d];
    }

    size_t typeAt = r.pos();
    if (!r.read(t.type, " type"))
      return fail(r.err);
    // ids from 1000 up are kiln's own formats, never a ggml type in a GGUF file
    const char *typeName = t.type < 1000 ? kiln_ggml_type_name(t.type) : nullptr;
    if (!typeName)
      return fail(what + " has unknown or unsupported ggml type " + num(t.type) + " at offset " +
                  num(typeAt));
    uint64_t rowBytes = 0;
    kiln_status_t st = kiln_ggml_row_bytes(t.type, t.dims[0], &rowBytes);
    if (st == KILN_STATUS_INVALID_ARGUMENT)
      return fail(what + " row length " + num(t.dims[0]) + " is not a multiple of the " +
                  typeName + " block size " + num(kiln_ggml_block_elems(t.type)));
    if (st != KILN_STATUS_OK || rowBytes == 0 ||
        rows > std::numeric_limits<uint64_t>::max() / rowBytes)
      return fail(what + " byte size overflows (" + typeName + ", " + num(elems) + " elements)");
    t.nbytes = rowBytes * rows;

    size_t offsetAt = r.pos();
    if (!r.read(t.offset, " offset"))
      return fail(r.err);
    if (t.offset % alignment_ != 0)
      return fail(what + " data offset " + num(t.offset) + " (stored at file offset " +
                  num(offsetAt) + ") is not a multiple of the alignment " + num(alignment_));
    tensorIndex_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  if (tensors_.empty())
    return true; // a metadata-only file need not carry the data padding

  // pos <= size and alignment <= 2^32, so this cannot overflow.
  uint64_t dataStart = (r.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (dataStart > size_)
    return fail("truncated file: data section starts at offset " + num(dataStart) +
                " but the file is only " + num(size_) + " bytes");
  uint64_t dataSize = size_ - dataStart;
  for (TensorInfo &t : tensors_) {
    if (t.offset >= dataSize)
      return fail("tensor " + quote(t.name) + " data offset " + num(t.offset) +
                  " is past the end of the file (the data section holds " + num(dataSize) +
                  " bytes)");
    if (t.nbytes > dataSize - t.offset)
      return fail("tensor " + quote(t.name) + " data runs past the end of the file: " +
                  num(t.nbytes) + " bytes at data offset " + num(t.offset) +
                  " but the data section holds " + num(dataSize) + " bytes");
    t.data = base_ + dataStart + t.offset;
  }

  std::vector<const TensorInfo *> byOffset;
  for (const TensorInfo &t : tensors_)
    byOffset.push_back(&t);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const TensorInfo *a, const TensorInfo *b) { return a->offset < b->offset; });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const TensorInfo &a = *byOffset[i - 1], &b = *byOffset[i];
    if (a.offset + a.nbytes > b.offset) // both are inside the data section: no overflow
      return fail("tensors " + quote(a.name) + " and " + quote(b.name) + " overlap: " +
                  quote(a.name) + " covers data bytes [" + num(a.offset) + ", " +
                  num(a.offset + a.nbytes) + ") and " + quote(b.name) + " starts at " +
                  num(b.offset));
  }
  return true;
}

models::ModelSource modelSource(const GgufFile &file, WeightStore &weights) {
  for (const TensorInfo &t : file.tensors())
    weights.add(WeightView{t.name, t.type, t.dims, t.data, t.nbytes});
  return {&file.metadata(), &weights};
}

} // namespace kiln::gguf
