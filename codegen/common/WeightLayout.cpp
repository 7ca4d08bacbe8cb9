#include "codegen/common/WeightLayout.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kiln/quant.h"
#include "kiln/quant_packed.h"

namespace kiln::codegen {

namespace {

// Converts rows [0, rows) of a matrix from `srcFormat` (srcRowBytes apart) to `format`
// (dstRowStride apart, rowLength elements zero-padded to paddedRowLength), split over the
// machine's cores: each row is independent, so the bytes do not depend on the split
// (Llama-2-7B shape, q4_0, 2 cores: the compile 2:42 -> 2:27, docs/fusion.md).
bool convertRows(uint32_t srcFormat, const uint8_t *src, uint64_t srcRowBytes, uint32_t format,
                 uint8_t *dst, uint64_t dstRowStride, uint64_t rows, uint64_t rowLength,
                 uint64_t paddedRowLength, const std::string &name, std::string &error) {
  struct Failure {
    uint64_t row = UINT64_MAX;
    kiln_status_t status = KILN_STATUS_OK;
  };
  auto run = [&](uint64_t r0, uint64_t r1, Failure &f) {
    std::vector<float> row(paddedRowLength, 0.0f);
    for (uint64_t r = r0; r < r1; ++r) {
      kiln_status_t st = kiln_dequantize(srcFormat, src + r * srcRowBytes, row.data(), rowLength);
      if (st == KILN_STATUS_OK)
        st = kiln_quantize(format, row.data(), dst + r * dstRowStride, paddedRowLength);
      if (st != KILN_STATUS_OK) {
        f = {r, st};
        return;
      }
    }
  };
  // a thread per 2^20 elements at least, at most one per core (8 at most)
  const uint64_t cores = std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, 8);
  const uint64_t parts = std::clamp<uint64_t>(rows * paddedRowLength >> 20, 1, cores);
  std::vector<Failure> failures(parts);
  struct Threads : std::vector<std::thread> { // joined however the function is left
    ~Threads() {
      for (std::thread &t : *this)
        t.join();
    }
  };
  {
    Threads threads;
    for (uint64_t p = 1; p < parts; ++p)
      threads.emplace_back(run, rows * p / parts, rows * (p + 1) / parts, std::ref(failures[p]));
    run(0, rows / parts, failures[0]);
  }
  for (const Failure &f : failures) // the first failing row, as a serial loop reports it
    if (f.status != KILN_STATUS_OK) {
      error = "weight '" + name + "' row " + std::to_string(f.row) + ": " +
              kiln_status_message(f.status);
      return false;
    }
  return true;
}

} // namespace

uint64_t WeightLayout::reserve(uint64_t size, uint64_t align) {
  uint64_t offset = (bytes_.size() + align - 1) / align * align;
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

namespace {

std::string conversionOf(uint32_t src, uint32_t dst) {
  if (src == dst)
    return "lossless";
  // f16 and bf16 values are f32 values (the other way a float source may not fit)
  const bool exact =
      dst == KILN_GGML_TYPE_F32 && (src == KILN_GGML_TYPE_F16 || src == KILN_GGML_TYPE_BF16);
  const char *n = kiln_ggml_type_name(src);
  return std::string(exact ? "converted" : "requantised") + " from " + (n ? n : "?");
}

} // namespace

// Fills t's padded row, stride, size and padding bytes from its format, layout, rows and
// row length (r16 / r32: t.format becomes the packed type). The one place a weight's size
// is decided: addWeight and storedBytes both ask it.
bool WeightLayout::sizeTensor(PackedTensor &t, uint64_t rowAlign, std::string &error) {
  const uint64_t block = kiln_ggml_block_elems(t.format);
  if (block == 0) {
    error = "weight '" + t.name + "': unknown storage format " + std::to_string(t.format);
    return false;
  }
  t.paddedRowLength = (t.rowLength + block - 1) / block * block;
  if (t.layout == RowLayout::R16 || t.layout == RowLayout::R32) {
    const uint32_t groupRows = t.layout == RowLayout::R32 ? 32 : 16;
    const uint32_t packed = kiln_packed_type(t.format, groupRows);
    if (!packed) {
      error = "weight '" + t.name + "': the " + (t.layout == RowLayout::R16 ? "r16" : "r32") +
              " layout needs q4_0, q4_1 or q8_0 (r16: or q4_K, q5_K, q6_K), not " +
              kiln_ggml_type_name(t.format);
      return false;
    }
    uint64_t rowBytes = 0;
    kiln_ggml_row_bytes(t.format, t.paddedRowLength, &rowBytes);
    t.format = packed;
    t.rowStride = kiln_packed_group_bytes(packed, t.paddedRowLength);
    t.size = t.rowStride * ((t.rows + groupRows - 1) / groupRows);
    // bytes of the logical elements at the format's bits per weight; the rest is padding
    t.paddingBytes = t.size - rowBytes * t.rows * t.rowLength / t.paddedRowLength;
    return true;
  }
  uint64_t blockRowBytes = 0;
  if (kiln_ggml_row_bytes(t.format, t.paddedRowLength, &blockRowBytes) != KILN_STATUS_OK) {
    error = "weight '" + t.name + "': row of " + std::to_string(t.paddedRowLength) +
            " elements does not fit the format";
    return false;
  }
  if (t.layout == RowLayout::Rows && (rowAlign < kAlign || (rowAlign & (rowAlign - 1)))) {
    error = "weight '" + t.name + "': row alignment " + std::to_string(rowAlign) +
            " is not a power of two >= " + std::to_string(kAlign);
    return false;
  }
  t.rowStride = t.layout == RowLayout::Rows ? (blockRowBytes + rowAlign - 1) / rowAlign * rowAlign
                                            : blockRowBytes;
  t.size = t.rowStride * t.rows;
  t.paddingBytes =
      ((t.paddedRowLength - t.rowLength) * blockRowBytes / t.paddedRowLength +
       (t.rowStride - blockRowBytes)) *
      t.rows;
  return true;
}

uint64_t WeightLayout::storedBytes(uint32_t format, RowLayout layout, uint64_t rows,
                                   uint64_t rowLength, uint64_t rowAlign) {
  PackedTensor t;
  t.format = format;
  t.layout = layout;
  t.rows = rows;
  t.rowLength = rowLength;
  std::string error;
  return sizeTensor(t, rowAlign, error) ? t.size : 0;
}

void WeightLayout::reserveBytes(uint64_t bytes) {
  if (bytes <= bytes_.capacity())
    return;
  // A hint: where the address space is refused (a model larger than memory under strict
  // overcommit), the section grows as before and the weights themselves say what fails.
  try {
    bytes_.reserve(bytes);
  } catch (const std::exception &) {
  }
}

bool WeightLayout::addWeight(const WeightStore &store, const std::string &name,
                             uint32_t format, std::string &error, RowLayout layout,
                             uint64_t rowAlign) {
  if (const PackedTensor *t = find(name)) {
    const uint32_t base = kiln_is_packed(t->format) ? kiln_packed_base_type(t->format)
                                                    : t->format;
    if (base == format && t->layout == layout)
      return true;
    error = "weight '" + name + "' is read in two formats or layouts (" +
            kiln_format_name(t->format) + " and " +
            (kiln_ggml_type_name(format) ? kiln_ggml_type_name(format) : "?") + ")";
    return false;
  }
  const WeightView *src = store.find(name);
  if (!src) {
    error = "weight '" + name + "' is not in the weight store";
    return false;
  }
  PackedTensor t;
  t.name = name;
  t.format = format;
  t.layout = layout;
  t.shape = src->dims;
  t.rowLength = src->rowLength();
  t.rows = src->numRows();
  if (!sizeTensor(t, rowAlign, error))
    return false;
  t.conversion = conversionOf(src->format, format);
  // calibration-aware rounding chose this weight's codes in this format (WeightStore.h)
  const WeightEncoding *enc = store.encoding(name, format);
  if (enc && enc->paddedRowLength != t.paddedRowLength)
    enc = nullptr;
  if (enc)
    t.conversion = enc->method + "-rounded from " +
                   (kiln_ggml_type_name(src->format) ? kiln_ggml_type_name(src->format) : "?");
  if (layout == RowLayout::R16 || layout == RowLayout::R32)
    return addPacked(*src, format, t, enc ? enc->bytes.data() : nullptr, error);
  uint64_t blockRowBytes = 0;
  kiln_ggml_row_bytes(format, t.paddedRowLength, &blockRowBytes);
  t.offset = reserve(t.size, layout == RowLayout::Rows ? rowAlign : kAlign);
  uint8_t *dst = bytes_.data() + t.offset;

  if (enc) {
    for (uint64_t r = 0; r < t.rows; ++r)
      std::memcpy(dst + r * t.rowStride, enc->bytes.data() + r * blockRowBytes, blockRowBytes);
  } else if (src->format == format && t.paddedRowLength == t.rowLength &&
      t.rowStride == blockRowBytes) {
    // Same format, no padding: the bytes are already what the kernels read.
    std::memcpy(dst, src->data, t.size);
    t.repacked = true;
  } else {
    uint64_t srcRowBytes = 0;
    if (kiln_ggml_row_bytes(src->format, t.rowLength, &srcRowBytes) != KILN_STATUS_OK) {
      error = "weight '" + name + "': cannot decode its source format";
      return false;
    }
    if (src->format == format && t.paddedRowLength != t.rowLength)
      t.conversion = std::string("re-encoded (rows padded) from ") + kiln_ggml_type_name(format);
    if (!convertRows(src->format, src->data, srcRowBytes, format, dst, t.rowStride, t.rows,
                     t.rowLength, t.paddedRowLength, name, error))
      return false;
  }
  tensors_.push_back(std::move(t));
  return true;
}

// r16 / r32 (t sized by sizeTensor): ggml rows of the base format (the source's bytes when
// it is already that format with whole blocks, else quantised from fp32), then
// kiln_repack_packed.
bool WeightLayout::addPacked(const WeightView &src, uint32_t base, PackedTensor &t,
                             const uint8_t *encoded, std::string &error) {
  const uint32_t groupRows = t.layout == RowLayout::R32 ? 32 : 16;
  uint64_t rowBytes = 0;
  kiln_ggml_row_bytes(base, t.paddedRowLength, &rowBytes);
  std::vector<uint8_t> ggml;
  const uint8_t *rows = encoded ? encoded : src.data;
  if (!encoded && (src.format != base || t.paddedRowLength != t.rowLength)) {
    uint64_t srcRowBytes = 0;
    if (kiln_ggml_row_bytes(src.format, t.rowLength, &srcRowBytes) != KILN_STATUS_OK) {
      error = "weight '" + t.name + "': cannot decode its source format";
      return false;
    }
    if (src.format == base)
      t.conversion = std::string("re-encoded (rows padded) from ") + kiln_ggml_type_name(base);
    ggml.resize(rowBytes * t.rows);
    if (!convertRows(src.format, src.data, srcRowBytes, base, ggml.data(), rowBytes, t.rows,
                     t.rowLength, t.paddedRowLength, t.name, error))
      return false;
    rows = ggml.data();
  }
  // a group is whole 4 * groupRows-byte chunks: an r32 matrix on a 128-byte boundary keeps
  // every HVX vector load of it aligned
  t.offset = reserve(t.size, 4u * groupRows);
  kiln_status_t st = kiln_repack_packed(t.format, rows, rowBytes, t.rows, t.paddedRowLength,
                                        bytes_.data() + t.offset);
  if (st != KILN_STATUS_OK) {
    error = "weight '" + t.name + "': repacking failed: " + kiln_status_message(st);
    return false;
  }
  t.repacked = !encoded && src.format == base;
  tensors_.push_back(std::move(t));
  return true;
}

} // namespace kiln::codegen
