#include "codegen/common/WeightLayout.h"

#include <cstring>

#include "kiln/quant.h"

namespace kiln::codegen {

uint64_t WeightLayout::reserve(uint64_t size) {
  uint64_t offset = (bytes_.size() + kAlign - 1) / kAlign * kAlign;
  bytes_.resize(offset + size, 0);
  return offset;
}

const PackedTensor *WeightLayout::find(const std::string &name) const {
  for (const PackedTensor &t : tensors_)
    if (t.name == name)
      return &t;
  return nullptr;
}

uint64_t WeightLayout::paddingBytes() const {
  uint64_t sum = 0;
  for (const PackedTensor &t : tensors_)
    sum += t.paddingBytes;
  return sum;
}

void WeightLayout::addF32(const std::string &name, std::vector<uint64_t> shape,
                          const std::vector<float> &data) {
  PackedTensor t;
  t.name = name;
  t.format = KILN_GGML_TYPE_F32;
  t.shape = std::move(shape);
  t.rowLength = t.paddedRowLength = t.shape.empty() ? 0 : t.shape[0];
  t.rows = t.rowLength ? data.size() / t.rowLength : 0;
  t.rowStride = t.rowLength * 4;
  t.size = data.size() * 4;
  t.offset = reserve(t.size);
  std::memcpy(bytes_.data() + t.offset, data.data(), t.size);
  tensors_.push_back(std::move(t));
}

bool WeightLayout::addWeight(const WeightStore &store, const std::string &name,
                             uint32_t format, std::string &error) {
  if (const PackedTensor *t = find(name)) {
    if (t->format == format)
      return true;
    error = "weight '" + name + "' is read in two formats (" +
            kiln_ggml_type_name(t->format) + " and " +
            (kiln_ggml_type_name(format) ? kiln_ggml_type_name(format) : "?") + ")";
    return false;
  }
  const WeightView *src = store.find(name);
  if (!src) {
    error = "weight '" + name + "' is not in the weight store";
    return false;
  }
  const uint64_t block = kiln_ggml_block_elems(format);
  if (block == 0) {
    error = "weight '" + name + "': unknown storage format " + std::to_string(format);
    return false;
  }
  PackedTensor t;
  t.name = name;
  t.format = format;
  t.shape = src->dims;
  t.rowLength = src->rowLength();
  t.rows = src->numRows();
  t.paddedRowLength = (t.rowLength + block - 1) / block * block;
  if (kiln_ggml_row_bytes(format, t.paddedRowLength, &t.rowStride) != KILN_STATUS_OK) {
    error = "weight '" + name + "': row of " + std::to_string(t.paddedRowLength) +
            " elements does not fit the format";
    return false;
  }
  uint64_t logicalRowBytes = 0;
  kiln_ggml_row_bytes(KILN_GGML_TYPE_F32, t.rowLength, &logicalRowBytes);
  t.size = t.rowStride * t.rows;
  t.paddingBytes = (t.paddedRowLength - t.rowLength) * t.rowStride / t.paddedRowLength * t.rows;
  t.offset = reserve(t.size);
  uint8_t *dst = bytes_.data() + t.offset;

  if (src->format == format && t.paddedRowLength == t.rowLength) {
    // Same format, no padding: the bytes are already what the kernels read.
    std::memcpy(dst, src->data, t.size);
    t.repacked = true;
  } else {
    uint64_t srcRowBytes = 0;
    if (kiln_ggml_row_bytes(src->format, t.rowLength, &srcRowBytes) != KILN_STATUS_OK) {
      error = "weight '" + name + "': cannot decode its source format";
      return false;
    }
    std::vector<float> row(t.paddedRowLength, 0.0f);
    for (uint64_t r = 0; r < t.rows; ++r) {
      kiln_status_t st =
          kiln_dequantize(src->format, src->data + r * srcRowBytes, row.data(), t.rowLength);
      if (st == KILN_STATUS_OK)
        st = kiln_quantize(format, row.data(), dst + r * t.rowStride, t.paddedRowLength);
      if (st != KILN_STATUS_OK) {
        error = "weight '" + name + "' row " + std::to_string(r) + ": " +
                kiln_status_message(st);
        return false;
      }
    }
  }
  tensors_.push_back(std::move(t));
  return true;
}

} // namespace kiln::codegen
