//===- WeightLayout.h - packs weights into the artifact's weights section -===//
//
// Each weight the code reads is stored once, in the format its ops ask for, starting on
// a 64-byte boundary (or its row alignment, when larger). Rows are padded with zero elements up to the format's block (so a
// 172-wide row can be q8_0) and packed back to back. Conversion goes through fp32 with
// runtime-min's decoders and quantizers; a tensor already in the target format with no
// padding is copied byte for byte (lossless repack). No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_COMMON_WEIGHTLAYOUT_H
#define KILN_CODEGEN_COMMON_WEIGHTLAYOUT_H

#include <cstdint>
#include <string>
#include <vector>

#include "models/weights/WeightStore.h"

namespace kiln::codegen {

// How a weight's rows are stored (the op attribute kiln.layout; Block without one).
// Rows: plain rows, the stride a multiple of the row alignment (the target's cache line or
// vector: kiln.row_align, default 64 bytes). R16 / R32: q4_0/q4_1/q8_0 repacked in groups
// of 16 or 32 rows (kiln/quant_packed.h); an R32 matrix starts on a 128-byte boundary.
enum class RowLayout { Block, Rows, R16, R32 };

struct PackedTensor {
  std::string name;
  uint32_t format = 0;
  std::vector<uint64_t> shape;   // logical, ggml order
  uint64_t rowLength = 0, paddedRowLength = 0, rows = 0;
  uint64_t rowStride = 0;        // bytes; packed formats: bytes per 16- or 32-row group
  uint64_t offset = 0, size = 0; // within the weights section
  uint64_t paddingBytes = 0;     // bytes spent on padding elements
  bool repacked = false;         // copied losslessly from the source
  RowLayout layout = RowLayout::Block;
  std::string conversion;        // "lossless", "requantised from q6_K", "gptq-rounded from
                                 // f32" (kiln inspect)
};

class WeightLayout {
public:
  static constexpr uint64_t kAlign = 64;

  // Stores weight `name` from the store in `format`; a second request for the same name
  // must ask for the same format. rowAlign (a power of two >= 64) applies to Rows.
  bool addWeight(const WeightStore &store, const std::string &name, uint32_t format,
                 std::string &error, RowLayout layout = RowLayout::Block,
                 uint64_t rowAlign = kAlign);
  // Bytes addWeight stores for `rows` rows of `rowLength` elements in `format` and `layout`
  // (without the alignment before it); 0 when the format or layout cannot hold it.
  static uint64_t storedBytes(uint32_t format, RowLayout layout, uint64_t rows,
                              uint64_t rowLength, uint64_t rowAlign = kAlign);
  // Makes room for `bytes` of weights before they are added: the section grows in place
  // up to that, where growing it by doubling copied all of it so far each time.
  void reserveBytes(uint64_t bytes);
  // Stores an fp32 table the compiler computed (e.g. RoPE cos/sin).
  void addF32(const std::string &name, std::vector<uint64_t> shape,
              const std::vector<float> &data);

  const PackedTensor *find(const std::string &name) const;
  const std::vector<PackedTensor> &tensors() const { return tensors_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }
  uint64_t paddingBytes() const;

private:
  uint64_t reserve(uint64_t size, uint64_t align = kAlign);
  static bool sizeTensor(PackedTensor &t, uint64_t rowAlign, std::string &error);
  // encoded: the weight's ggml rows in `base` already (a calibrated encoding), or null
  bool addPacked(const WeightView &src, uint32_t base, PackedTensor &t,
                 const uint8_t *encoded, std::string &error);
  std::vector<PackedTensor> tensors_;
  std::vector<uint8_t> bytes_;
};

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_WEIGHTLAYOUT_H
