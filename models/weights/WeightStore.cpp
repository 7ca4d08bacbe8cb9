#include "models/weights/WeightStore.h"

#include <algorithm>

#include "kiln/quant.h"

namespace kiln {

uint64_t WeightView::numRows() const {
  uint64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i)
    rows *= dims[i];
  return rows;
}

void WeightStore::addOwnedF32(const std::string &name, std::vector<uint64_t> dims,
                              std::vector<float> data) {
  std::vector<float> &backing = owned_[name];
  backing = std::move(data);
  add(WeightView{name, 0 /* f32 */, std::move(dims),
                 reinterpret_cast<const uint8_t *>(backing.data()), backing.size() * 4});
}

void WeightStore::addOwned(const std::string &name, uint32_t format, std::vector<uint64_t> dims,
                           std::vector<uint8_t> bytes) {
  std::vector<uint8_t> &backing = ownedBytes_[name];
  backing = std::move(bytes);
  add(WeightView{name, format, std::move(dims), backing.data(), backing.size()});
}

const WeightView *WeightStore::find(const std::string &name) const {
  auto it = views_.find(name);
  return it == views_.end() ? nullptr : &it->second;
}

bool WeightStore::dequantize(const std::string &name, std::vector<float> &out,
                             std::string &error) const {
  const WeightView *w = find(name);
  if (!w) {
    error = "weight '" + name + "' is not in the weight store";
    return false;
  }
  uint64_t rowBytes = 0;
  kiln_status_t st = kiln_ggml_row_bytes(w->format, w->rowLength(), &rowBytes);
  if (st != KILN_STATUS_OK || rowBytes * w->numRows() > w->nbytes) {
    error = "weight '" + name + "': cannot decode format " + std::to_string(w->format) +
            " with row length " + std::to_string(w->rowLength());
    return false;
  }
  out.resize(w->rowLength() * w->numRows());
  for (uint64_t r = 0; r < w->numRows(); ++r) {
    st = kiln_dequantize(w->format, w->data + r * rowBytes, out.data() + r * w->rowLength(),
                         w->rowLength());
    if (st != KILN_STATUS_OK) {
      error = "weight '" + name + "': " + kiln_status_message(st);
      return false;
    }
  }
  return true;
}

const WeightEncoding *WeightStore::encoding(const std::string &name, uint32_t format) const {
  auto it = encodings_.find({name, format});
  return it == encodings_.end() ? nullptr : &it->second;
}

std::vector<uint32_t> WeightStore::encodedFormats(const std::string &name) const {
  std::vector<uint32_t> out;
  auto it = encodings_.lower_bound({name, 0});
  for (; it != encodings_.end() && it->first.first == name; ++it)
    out.push_back(it->first.second);
  return out;
}

bool WeightStore::dequantizeAs(const std::string &name, uint32_t format,
                               std::vector<float> &out, std::string &error) const {
  const WeightView *w = find(name);
  if (const WeightEncoding *e = w ? encoding(name, format) : nullptr) {
    const uint64_t n = w->rowLength(), rows = w->numRows(), padded = e->paddedRowLength;
    uint64_t rowBytes = 0;
    if (padded < n || kiln_ggml_row_bytes(format, padded, &rowBytes) != KILN_STATUS_OK ||
        rowBytes * rows != e->bytes.size()) {
      error = "weight '" + name + "': its " + e->method + " encoding does not fit its shape";
      return false;
    }
    std::vector<float> row(padded);
    out.resize(n * rows);
    for (uint64_t r = 0; r < rows; ++r) {
      kiln_dequantize(format, e->bytes.data() + r * rowBytes, row.data(), padded);
      std::copy(row.begin(), row.begin() + long(n), out.begin() + long(r * n));
    }
    return true;
  }
  if (!dequantize(name, out, error))
    return false;
  const uint64_t block = kiln_ggml_block_elems(format), n = w->rowLength();
  if (block == 0) {
    error = "weight '" + name + "': unknown storage format " + std::to_string(format);
    return false;
  }
  if (w->format == format && n % block == 0)
    return true; // stored as is: the decoded values are what the code reads
  const uint64_t padded = (n + block - 1) / block * block;
  uint64_t rowBytes = 0;
  if (kiln_ggml_row_bytes(format, padded, &rowBytes) != KILN_STATUS_OK) {
    error = "weight '" + name + "': rows of " + std::to_string(padded) +
            " elements do not fit format " + std::to_string(format);
    return false;
  }
  std::vector<float> row(padded, 0.0f);
  std::vector<uint8_t> bytes(rowBytes);
  for (uint64_t r = 0; r < w->numRows(); ++r) {
    float *dst = out.data() + r * n;
    std::copy(dst, dst + n, row.begin());
    std::fill(row.begin() + long(n), row.end(), 0.0f); // zero padding, as the layout stores
    kiln_status_t st = kiln_quantize(format, row.data(), bytes.data(), padded);
    if (st == KILN_STATUS_OK)
      st = kiln_dequantize(format, bytes.data(), row.data(), padded);
    if (st != KILN_STATUS_OK) {
      error = "weight '" + name + "' row " + std::to_string(r) + ": " + kiln_status_message(st);
      return false;
    }
    std::copy(row.begin(), row.begin() + long(n), dst);
  }
  return true;
}

} // namespace kiln
