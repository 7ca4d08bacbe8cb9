//===- GgufWriter.h - GGUF v3 writer for tests and generators ------------===//
//
// Builds a GGUF file (layout documented in GgufFile.h): metadata entries in the order
// they were added, then tensor infos, then each tensor's bytes at the next multiple of the
// alignment, padded with zeros. Tensors are copied in, or made on demand as they are
// written (addTensorFill), so writeFile holds one such tensor at a time: a 7B model's 13
// GB of f16 need not fit in memory, let alone twice. The writer checks nothing on purpose -
// duplicate keys, odd type ids or sizes that disagree with dims are written as given -
// so that tests can craft bad files; GgufFile is the validator.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_GGUF_GGUFWRITER_H
#define KILN_FRONTENDS_GGUF_GGUFWRITER_H

#include "compiler/frontends/gguf/GgufFile.h"
#include "models/ModelWriter.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::gguf {

// Value constructors (the matching field of Value is set).
Value makeU8(uint8_t v);
Value makeI8(int8_t v);
Value makeU16(uint16_t v);
Value makeI16(int16_t v);
Value makeU32(uint32_t v);
Value makeI32(int32_t v);
Value makeU64(uint64_t v);
Value makeI64(int64_t v);
Value makeF32(float v);
Value makeF64(double v);
Value makeBool(bool v);
Value makeString(std::string v);
// Elements are encoded as `elemType` (an array element is itself encoded from its own
// elemType/array fields, which is how arrays nest).
Value makeArray(ValueType elemType, std::vector<Value> elems);

class GgufWriter final : public models::ModelWriter {
public:
  // Tensor data is laid out at multiples of `alignment` (0 and 1 mean unaligned). When it
  // is not GGUF's default 32, a u32 general.alignment entry is written first - unless
  // the caller adds general.alignment itself, in which case only the caller's is written.
  explicit GgufWriter(uint32_t alignment = 32) : alignment_(alignment) {}

  // 3 by default; 2 has the same layout. Other values only craft bad files.
  void setVersion(uint32_t version) { version_ = version; }

  void add(const std::string &key, const Value &v);
  void addU8(const std::string &key, uint8_t v) { add(key, makeU8(v)); }
  void addI8(const std::string &key, int8_t v) { add(key, makeI8(v)); }
  void addU16(const std::string &key, uint16_t v) { add(key, makeU16(v)); }
  void addI16(const std::string &key, int16_t v) { add(key, makeI16(v)); }
  void addU32(const std::string &key, uint32_t v) override { add(key, makeU32(v)); }
  void addI32(const std::string &key, int32_t v) { add(key, makeI32(v)); }
  void addU64(const std::string &key, uint64_t v) { add(key, makeU64(v)); }
  void addI64(const std::string &key, int64_t v) { add(key, makeI64(v)); }
  void addF32(const std::string &key, float v) override { add(key, makeF32(v)); }
  void addF64(const std::string &key, double v) { add(key, makeF64(v)); }
  void addBool(const std::string &key, bool v) override { add(key, makeBool(v)); }
  void addString(const std::string &key, const std::string &v) override { add(key, makeString(v)); }
  // The arrays a tokenizer needs (tokens, scores, token types).
  void addStringArray(const std::string &key, const std::vector<std::string> &v) override;
  void addF32Array(const std::string &key, const std::vector<float> &v) override;
  void addI32Array(const std::string &key, const std::vector<int32_t> &v) override;
  // Writes the key, `typeId` and `payload` verbatim: for values the typed API cannot
  // express (unknown type ids, bool 2, truncated arrays).
  void addRaw(const std::string &key, uint32_t typeId, const std::vector<uint8_t> &payload);

  // `data` (nbytes) is copied. `dims` are in ggml order (dims[0] = row length).
  void addTensor(const std::string &name, uint32_t ggmlType, const std::vector<uint64_t> &dims,
                 const void *data, size_t nbytes) override;
  // nbytes made by `fill` whenever the bytes are needed (writeFile, toBytes): it must write
  // the same bytes on every call.
  void addTensorFill(const std::string &name, uint32_t ggmlType,
                     const std::vector<uint64_t> &dims, size_t nbytes, Fill fill) override;

  std::vector<uint8_t> toBytes() const;
  bool writeFile(const std::string &path, std::string &error) const;

private:
  struct Kv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> payload; // the encoded value
  };
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> dims;
    size_t nbytes;
    std::vector<uint8_t> bytes; // the copied bytes; empty when fill makes them
    Fill fill;
  };
  // Everything before the first tensor's bytes.
  std::vector<uint8_t> header() const;
  // Tensor t's bytes into scratch (made or copied), for the file's data section.
  const std::vector<uint8_t> &tensorBytes(const Tensor &t, std::vector<uint8_t> &scratch) const;

  uint32_t alignment_;
  uint32_t version_ = 3;
  bool hasAlignmentKey_ = false;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

} // namespace kiln::gguf

#endif // KILN_FRONTENDS_GGUF_GGUFWRITER_H
