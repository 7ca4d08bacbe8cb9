#include "models/weights/WeightEdits.h"

#include "kiln/quant.h"

namespace kiln {

bool decodeView(const WeightView &v, std::vector<float> &out, std::string &error) {
  WeightStore one;
  one.add(v);
  return one.dequantize(v.name, out, error);
}

bool replaceKeepingFormat(WeightStore &store, const std::string &name,
                          const std::vector<float> &values, std::string &error) {
  const WeightView *w = store.find(name);
  if (!w) {
    error = "weight '" + name + "' is not in the model";
    return false;
  }
  const uint64_t rowLen = w->rowLength(), rows = w->numRows();
  uint64_t rowBytes = 0;
  if (values.size() != rowLen * rows ||
      kiln_ggml_row_bytes(w->format, rowLen, &rowBytes) != KILN_STATUS_OK) {
    error = "weight '" + name + "': cannot write " + std::to_string(rowLen) +
            "-element rows in format " + std::to_string(w->format);
    return false;
  }
  std::vector<uint8_t> bytes(rowBytes * rows);
  for (uint64_t r = 0; r < rows; ++r)
    if (kiln_quantize(w->format, values.data() + r * rowLen, bytes.data() + r * rowBytes,
                      rowLen) != KILN_STATUS_OK) {
      error = "weight '" + name + "': kiln cannot write format " + std::to_string(w->format) +
              " (ggml id); convert the base model to f16 or a q4/q5/q6/q8 format first";
      return false;
    }
  const uint32_t format = w->format;
  std::vector<uint64_t> dims = w->dims;
  store.addOwned(name, format, std::move(dims), std::move(bytes));
  return true;
}

namespace {

std::string dimsText(const std::vector<uint64_t> &d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

bool mergeOne(WeightStore &store, const LoraDelta &d, float alpha, float userScale,
              std::string &error) {
  if (d.target == "token_embd.weight") {
    error = "the adapter changes token_embd.weight: LoRA on the token embedding is not "
            "supported (llama.cpp stores its A and B transposed)";
    return false;
  }
  const WeightView *w = store.find(d.target);
  if (!w) {
    error = "the adapter changes '" + d.target + "', which the model does not have";
    return false;
  }
  const std::vector<uint64_t> &wd = w->dims, &ad = d.a.dims, &bd = d.b.dims;
  if (wd.size() != 2 || ad.size() != 2 || bd.size() != 2 || ad[0] != wd[0] ||
      bd[1] != wd[1] || ad[1] != bd[0] || ad[1] == 0) {
    error = "adapter tensors for '" + d.target + "' do not fit it: lora_a " + dimsText(ad) +
            ", lora_b " + dimsText(bd) + ", the weight " + dimsText(wd) +
            " (expected lora_a [in, rank], lora_b [rank, out])";
    return false;
  }
  const uint64_t in = wd[0], out = wd[1], rank = ad[1];
  std::vector<float> W, A, B;
  if (!store.dequantize(d.target, W, error) || !decodeView(d.a, A, error) ||
      !decodeView(d.b, B, error))
    return false;
  const float scale = alpha != 0 ? userScale * alpha / float(rank) : userScale;
  // W[o][i] += scale * sum_k B[o][k] A[k][i]: A is [rank rows of `in`], B [out rows of rank].
  for (uint64_t o = 0; o < out; ++o) {
    float *row = W.data() + o * in;
    for (uint64_t k = 0; k < rank; ++k) {
      const float c = scale * B[o * rank + k];
      const float *a = A.data() + k * in;
      for (uint64_t i = 0; i < in; ++i)
        row[i] += c * a[i];
    }
  }
  return replaceKeepingFormat(store, d.target, W, error);
}

} // namespace

bool mergeLora(WeightStore &store, const std::vector<LoraDelta> &deltas, float alpha,
               float userScale, std::string &error) {
  for (const LoraDelta &d : deltas)
    if (!mergeOne(store, d, alpha, userScale, error))
      return false;
  return true;
}

} // namespace kiln
