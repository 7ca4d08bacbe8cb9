//===- GgufFile.h - GGUF v2/v3 reader ------------------------------------===//
//
// Reads a GGUF file (ggml's model container) without copying tensor data: the file is
// mmap'ed and tensors are views into it. Every count, length and offset is checked
// against the bytes left before it is used; on any problem open() returns a one-line
// message naming it and no object.
//
// On-disk layout (little-endian), as ggml's gguf.h documents it:
//   u32 magic "GGUF" | u32 version (2 or 3) | u64 n_tensors | u64 n_kv
//   n_kv x { string key | u32 value_type | value }
//   n_tensors x { string name | u32 n_dims | u64 dims[n_dims] | u32 ggml_type | u64 offset }
//   padding to general.alignment (default 32, a power of two)
//   tensor data; each tensor at data_start + offset, offset a multiple of the alignment
// string = u64 length + bytes (no NUL). value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32,
// 5 i32, 6 f32, 7 bool, 8 string, 9 array (u32 elem_type, u64 count, elems; arrays nest),
// 10 u64, 11 i64, 12 f64. Version 1 (u32 counts) is rejected as obsolete.
//
// No LLVM/MLIR dependency: this library is also built into the sanitizer corpus test.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_GGUF_GGUFFILE_H
#define KILN_FRONTENDS_GGUF_GGUFFILE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/ModelSource.h"

namespace kiln::gguf {

// Metadata values are the format-neutral ones model families read (models/ModelSource.h).
using ValueType = models::MetaType;
using Value = models::MetaValue;

const char *valueTypeName(ValueType t);

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims; // ggml order: dims[0] is the contiguous (row) length
  uint32_t type = 0;          // ggml type id (see kiln/quant.h)
  uint64_t offset = 0;        // relative to the data section
  uint64_t nbytes = 0;
  const uint8_t *data = nullptr; // points into the mapping

  uint64_t numElements() const;
};

class GgufFile {
public:
  // Maps and parses `path`. On failure returns null and sets `error` to one line.
  static std::unique_ptr<GgufFile> open(const std::string &path, std::string &error);
  // Parses an in-memory image (not copied; must outlive the object). For tests/fuzzing.
  static std::unique_ptr<GgufFile> parse(const uint8_t *bytes, size_t size,
                                         std::string &error);
  ~GgufFile();
  GgufFile(const GgufFile &) = delete;
  GgufFile &operator=(const GgufFile &) = delete;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::map<std::string, Value> &metadata() const { return kv_; }
  const Value *find(const std::string &key) const;
  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const TensorInfo *findTensor(const std::string &name) const;
  size_t fileSize() const { return size_; }
  // The whole file image (the mapping, or the bytes given to parse()).
  const uint8_t *bytes() const { return base_; }

private:
  GgufFile() = default;
  bool parseImpl(std::string &error);
  bool parseHeaderAndMetadata(std::string &error);
  bool parseTensorInfos(std::string &error);

  const uint8_t *base_ = nullptr;
  size_t size_ = 0;
  void *mapping_ = nullptr; // non-null when we own an mmap
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  size_t metadataEnd_ = 0;  // file offset where the tensor infos start
  uint64_t nTensors_ = 0;   // from the header, already bounded by the file size
  std::map<std::string, Value> kv_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensorIndex_;
};

// The file as a model source (models/ModelSource.h): its metadata, and every tensor added
// to `weights` as a view into the mapping. Both must outlive the source.
models::ModelSource modelSource(const GgufFile &file, WeightStore &weights);

} // namespace kiln::gguf

#endif // KILN_FRONTENDS_GGUF_GGUFFILE_H
