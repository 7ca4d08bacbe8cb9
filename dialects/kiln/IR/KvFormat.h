//===- KvFormat.h - how a KV cache stores K and V --------------------------===//
//
// Shared by the reference executor and the code generator so both store the same values.
// K can be f32, f16 or int8 with one f32 scale per token and KV head (symmetric:
// scale = max|k| / 127 over the head's head_dim values, q = round-to-nearest-even(k / scale)
// computed as k * (1 / scale)); V can be f32 or f16. Compute is fp32 in every case.
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECTS_KILN_IR_KVFORMAT_H
#define KILN_DIALECTS_KILN_IR_KVFORMAT_H

#include <cstdint>
#include <string>

namespace kiln {

// Values are ggml type ids (kiln/quant.h): f32 0, f16 1, i8 24.
enum class KvElem : uint32_t { F32 = 0, F16 = 1, I8 = 24 };

struct KvFormat {
  KvElem k = KvElem::F32, v = KvElem::F32;
  bool operator==(const KvFormat &o) const { return k == o.k && v == o.v; }
};

inline const char *kvElemName(KvElem e) {
  return e == KvElem::F32 ? "f32" : e == KvElem::F16 ? "f16" : "int8";
}

// "f32", "f16", or "k=f32|f16|int8,v=f32|f16".
inline std::string kvFormatName(KvFormat f) {
  if (f.k == f.v)
    return kvElemName(f.k);
  return std::string("k=") + kvElemName(f.k) + ",v=" + kvElemName(f.v);
}

// Bytes one token adds to one layer's cache: K and V rows of kvHeads * headDim values,
// plus one f32 scale per KV head for int8 K.
inline uint64_t kvBytesPerTokenLayer(KvFormat f, uint64_t kvHeads, uint64_t headDim) {
  auto elem = [](KvElem e) { return e == KvElem::F32 ? 4u : e == KvElem::F16 ? 2u : 1u; };
  uint64_t bytes = kvHeads * headDim * (elem(f.k) + elem(f.v));
  if (f.k == KvElem::I8)
    bytes += kvHeads * 4;
  return bytes;
}

// Parses --kv. false + a one-line error for anything else (int8 V is not supported: V is
// summed with softmax weights, where per-token int8 error does not average out as in K.q).
inline bool parseKvFormat(const std::string &text, KvFormat &out, std::string &error) {
  auto elem = [](const std::string &s, KvElem &e) {
    if (s == "f32")
      e = KvElem::F32;
    else if (s == "f16")
      e = KvElem::F16;
    else if (s == "int8")
      e = KvElem::I8;
    else
      return false;
    return true;
  };
  const std::string usage = "; expected f32, f16 or k=<f32|f16|int8>,v=<f32|f16>";
  KvFormat f;
  if (text == "f32" || text == "f16") {
    elem(text, f.k);
    f.v = f.k;
    out = f;
    return true;
  }
  bool haveK = false, haveV = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
    size_t eq = part.find('=');
    std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    KvElem e;
    if (eq == std::string::npos || (key != "k" && key != "v") || (key == "k" ? haveK : haveV)) {
      error = "bad --kv '" + text + "'" + usage;
      return false;
    }
    if (!elem(value, e) || (key == "v" && e == KvElem::I8)) {
      error = "bad --kv '" + text + "': " + key + "=" + value + " is not supported" + usage;
      return false;
    }
    (key == "k" ? f.k : f.v) = e;
    (key == "k" ? haveK : haveV) = true;
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  out = f;
  return true;
}

} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_KVFORMAT_H
