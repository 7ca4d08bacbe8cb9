#include "compiler/weights/WeightStore.h"

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

} // namespace kiln
