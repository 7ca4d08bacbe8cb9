//===- WeightStore.h - named weights referenced by kiln IR ----------------===//
//
// kiln IR never embeds weights; ops name them and the store resolves the name to a
// storage format, a shape and bytes. Frontends fill the store with views into the
// mapped model file (no copies). No LLVM/MLIR dependency.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_WEIGHTS_WEIGHTSTORE_H
#define KILN_MODELS_WEIGHTS_WEIGHTSTORE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct WeightView {
  std::string name;
  uint32_t format = 0;          // ggml type id (kiln/quant.h)
  std::vector<uint64_t> dims;   // ggml order: dims[0] is the row length
  const uint8_t *data = nullptr;
  uint64_t nbytes = 0;

  uint64_t rowLength() const { return dims.empty() ? 0 : dims[0]; }
  uint64_t numRows() const;     // product of dims[1..]
};

// A weight's bytes in one storage format as calibration-aware rounding chose them
// (CalibratedQuant.h), rows padded with zeros to whole blocks. The reference executor
// (dequantizeAs) and the weight layout read these instead of rounding to nearest.
struct WeightEncoding {
  uint32_t format = 0;
  uint64_t paddedRowLength = 0;
  std::string method;         // how it was rounded ("gptq", "weighted")
  std::vector<uint8_t> bytes; // numRows rows of paddedRowLength elements in `format`
};

class WeightStore {
public:
  // Adds (or replaces) a tensor; a replaced tensor's encodings go with it.
  void add(WeightView view) {
    dropEncodings(view.name);
    builtFrom_.erase(view.name);
    views_[view.name] = std::move(view);
  }
  // Adds (or replaces) a tensor whose fp32 bytes the store owns - a weight a pass derived.
  void addOwnedF32(const std::string &name, std::vector<uint64_t> dims,
                   std::vector<float> data);
  // Adds (or replaces) a tensor of any format whose bytes the store owns (a frontend's
  // transposed copy).
  void addOwned(const std::string &name, uint32_t format, std::vector<uint64_t> dims,
                std::vector<uint8_t> bytes);
  const WeightView *find(const std::string &name) const;
  void remove(const std::string &name) {
    views_.erase(name), owned_.erase(name), ownedBytes_.erase(name), dropEncodings(name);
    builtFrom_.erase(name);
  }
  // What a derived weight was built from (its recipe chain as text, DerivedWeights.cpp),
  // so building it again from the same recipe keeps it and its encodings; null when
  // unknown. Cleared when the weight is replaced or removed.
  void setBuiltFrom(const std::string &name, std::string recipe) {
    builtFrom_[name] = std::move(recipe);
  }
  const std::string *builtFrom(const std::string &name) const {
    auto it = builtFrom_.find(name);
    return it == builtFrom_.end() ? nullptr : &it->second;
  }
  // The encoding of weight `name` in `format` (replacing one it had); null when none.
  void setEncoding(const std::string &name, WeightEncoding e) {
    uint32_t format = e.format;
    encodings_[{name, format}] = std::move(e);
  }
  const WeightEncoding *encoding(const std::string &name, uint32_t format) const;
  // The formats weight `name` has an encoding in.
  std::vector<uint32_t> encodedFormats(const std::string &name) const;
  const std::map<std::string, WeightView> &all() const { return views_; }

  // Decodes a whole tensor to fp32, row-major [numRows, rowLength]. One-line error
  // naming the tensor on failure.
  bool dequantize(const std::string &name, std::vector<float> &out, std::string &error) const;
  // The fp32 values the compiled code sees when the tensor is stored in `format` (ggml id):
  // its encoding in that format when it has one, else rows padded with zeros to the format's block, encoded with runtime-min's quantizers
  // and decoded again, as codegen's WeightLayout stores them. Same as dequantize() when
  // the tensor is already in `format` with whole blocks.
  bool dequantizeAs(const std::string &name, uint32_t format, std::vector<float> &out,
                    std::string &error) const;

private:
  void dropEncodings(const std::string &name) {
    encodings_.erase(encodings_.lower_bound({name, 0}), encodings_.upper_bound({name, ~0u}));
  }
  std::map<std::pair<std::string, uint32_t>, WeightEncoding> encodings_;
  std::map<std::string, std::string> builtFrom_;
  std::map<std::string, WeightView> views_;
  std::map<std::string, std::vector<float>> owned_; // backing of addOwnedF32 views
  std::map<std::string, std::vector<uint8_t>> ownedBytes_; // backing of addOwned views
};

} // namespace kiln

#endif // KILN_MODELS_WEIGHTS_WEIGHTSTORE_H
