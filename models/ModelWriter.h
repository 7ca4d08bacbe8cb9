//===- ModelWriter.h - where a model generator writes a model -------------===//
//
// The synthetic-model generators (models/<arch>/Synthetic*.h) write metadata and tensors
// through this interface, in the model source's vocabulary (ModelSource.h); a file format
// implements it (compiler/frontends/gguf's GgufWriter). No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_MODELWRITER_H
#define KILN_MODELS_MODELWRITER_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::models {

class ModelWriter {
public:
  virtual ~ModelWriter() = default;
  virtual void addU32(const std::string &key, uint32_t v) = 0;
  virtual void addF32(const std::string &key, float v) = 0;
  virtual void addString(const std::string &key, const std::string &v) = 0;
  virtual void addBool(const std::string &key, bool v) = 0;
  // The arrays a tokenizer needs (tokens, scores, token types).
  virtual void addStringArray(const std::string &key, const std::vector<std::string> &v) = 0;
  virtual void addF32Array(const std::string &key, const std::vector<float> &v) = 0;
  virtual void addI32Array(const std::string &key, const std::vector<int32_t> &v) = 0;
  // `data` (nbytes) is copied. `dims` are in ggml order (dims[0] = row length); ggmlType
  // is the storage format's ggml id.
  virtual void addTensor(const std::string &name, uint32_t ggmlType,
                         const std::vector<uint64_t> &dims, const void *data,
                         size_t nbytes) = 0;
  // nbytes made by `fill` whenever the writer needs them: it must write the same bytes on
  // every call (a large model's tensors are never all in memory at once).
  using Fill = std::function<void(uint8_t *dst)>;
  virtual void addTensorFill(const std::string &name, uint32_t ggmlType,
                             const std::vector<uint64_t> &dims, size_t nbytes, Fill fill) = 0;
};

} // namespace kiln::models

#endif // KILN_MODELS_MODELWRITER_H
