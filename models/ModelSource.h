//===- ModelSource.h - a model as every frontend hands it to a family -----===//
//
// Format-neutral: hyper-parameters as typed metadata by key, and the weights as named
// views (WeightStore). The keys are llama.cpp's GGUF names ("general.architecture",
// "llama.embedding_length", ...), the vocabulary model families already read; the GGUF
// frontend hands its file's metadata as it is, the ONNX frontend writes the same keys from
// the graph it raised. Keys kiln adds itself start with "kiln.". Families read a source
// (ModelFamilies.h) and never see a file format. No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_MODELSOURCE_H
#define KILN_MODELS_MODELSOURCE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/weights/WeightStore.h"

namespace kiln::models {

// The metadata value types (GGUF's type ids, which cover what every format needs).
enum class MetaType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

// One metadata value. Scalars are widened into the matching field; arrays hold their
// elements (which may be arrays themselves).
struct MetaValue {
  MetaType type = MetaType::U8;
  uint64_t u = 0;                  // U8/U16/U32/U64/Bool
  int64_t i = 0;                   // I8/I16/I32/I64
  double f = 0;                    // F32/F64
  std::string str;                 // String
  MetaType elemType = MetaType::U8; // Array
  std::vector<MetaValue> array;    // Array

  bool isInteger() const;
  // Any integer type (signed or unsigned) whose value fits; false otherwise.
  bool asU64(uint64_t &out) const;
  bool asF64(double &out) const; // F32/F64 and integers

  static MetaValue ofU32(uint32_t v);
  static MetaValue ofF32(float v);
  static MetaValue ofString(std::string v);
};

using Metadata = std::map<std::string, MetaValue>;

struct ModelSource {
  const Metadata *metadata = nullptr; // owned by the frontend (a GGUF file's, say)
  const WeightStore *weights = nullptr;

  const MetaValue *find(const std::string &key) const;
  const WeightView *findTensor(const std::string &name) const;
  // general.architecture, or "" when it is missing or not a string.
  std::string architecture() const;
};

} // namespace kiln::models

#endif // KILN_MODELS_MODELSOURCE_H
