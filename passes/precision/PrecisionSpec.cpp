#include "passes/precision/PrecisionSpec.h"

#include <algorithm>

#include "kiln/quant.h"
#include "kiln/quant_packed.h"

namespace kiln::precision {

namespace {

std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos)
      return parts;
    start = end + 1;
  }
}

const char *kFormatList =
    "f32, f16, q8_0 (int8), q6_k, q5_k, q4_k, q4_0 (int4), q4_1 (int4m) or q3_0 (int3)";

bool kquant(uint32_t id) {
  return id == KILN_GGML_TYPE_Q4_K || id == KILN_GGML_TYPE_Q5_K || id == KILN_GGML_TYPE_Q6_K;
}

} // namespace

bool parseFormat(const std::string &name, uint32_t &id) {
  static const std::map<std::string, uint32_t> names = {
      {"f32", KILN_GGML_TYPE_F32},   {"f16", KILN_GGML_TYPE_F16},
      {"q8_0", KILN_GGML_TYPE_Q8_0}, {"int8", KILN_GGML_TYPE_Q8_0},
      {"q4_0", KILN_GGML_TYPE_Q4_0}, {"int4", KILN_GGML_TYPE_Q4_0},
      {"q4_1", KILN_GGML_TYPE_Q4_1}, {"int4m", KILN_GGML_TYPE_Q4_1},
      {"q3_0", KILN_TYPE_Q3_0},      {"int3", KILN_TYPE_Q3_0},
      {"q4_k", KILN_GGML_TYPE_Q4_K}, {"q4_K", KILN_GGML_TYPE_Q4_K},
      {"q5_k", KILN_GGML_TYPE_Q5_K}, {"q5_K", KILN_GGML_TYPE_Q5_K},
      {"q6_k", KILN_GGML_TYPE_Q6_K}, {"q6_K", KILN_GGML_TYPE_Q6_K}};
  auto it = names.find(name);
  if (it == names.end())
    return false;
  id = it->second;
  return true;
}

std::string formatName(uint32_t id) {
  const char *n = kiln_ggml_type_name(id);
  return n ? n : "?";
}

const std::vector<uint32_t> &supportedFormats() {
  static const std::vector<uint32_t> f = {
      KILN_GGML_TYPE_F32,  KILN_GGML_TYPE_F16,  KILN_GGML_TYPE_Q8_0, KILN_GGML_TYPE_Q6_K,
      KILN_GGML_TYPE_Q5_K, KILN_GGML_TYPE_Q4_1, KILN_GGML_TYPE_Q4_K, KILN_GGML_TYPE_Q4_0,
      KILN_TYPE_Q3_0};
  return f;
}

const char *formatList() { return kFormatList; }

bool candidateFormat(uint32_t id, uint64_t rowLength) {
  return !kquant(id) || (rowLength > 0 && rowLength % kiln_ggml_block_elems(id) == 0);
}

bool normFormat(uint32_t id) { return id == KILN_GGML_TYPE_F32 || id == KILN_GGML_TYPE_F16; }

uint32_t sourceFormat(uint32_t source, bool norm, bool keepKQuants, bool keepPackedKQuants) {
  if (norm)
    return source == KILN_GGML_TYPE_F16 ? KILN_GGML_TYPE_F16 : KILN_GGML_TYPE_F32;
  const auto &formats = supportedFormats();
  // q4_K, q5_K and q6_K each have an r16 form with integer-dot kernels
  if (std::find(formats.begin(), formats.end(), source) != formats.end() &&
      (keepKQuants || keepPackedKQuants || !kquant(source)))
    return source;
  // bytes per element as fractions bytes / elems, compared cross-multiplied
  struct Rate {
    uint64_t bytes, elems;
    bool operator<(const Rate &o) const { return bytes * o.elems < o.bytes * elems; }
  };
  auto rate = [](uint32_t f) {
    return Rate{kiln_ggml_block_bytes(f), kiln_ggml_block_elems(f)};
  };
  const Rate src = rate(source);
  if (src.elems == 0)
    return KILN_GGML_TYPE_F32;
  // among the 32-element block formats: a source's rows need not fill 256-element blocks
  uint32_t best = KILN_GGML_TYPE_F32;
  for (uint32_t f : formats)
    if (!kquant(f) && src < rate(f) && rate(f) < rate(best))
      best = f;
  return best;
}

const std::vector<std::string> &tensorClasses() {
  static const std::vector<std::string> c = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                             "ffn_gate", "ffn_up", "ffn_down", "embedding",
                                             "output",   "norms"};
  return c;
}

std::string classOf(const std::string &opKind, const std::string &weight) {
  if (opKind == "embed")
    return "embedding";
  if (opKind == "logits")
    return "output";
  if (opKind == "rms_norm")
    return "norms";
  // blk.N.<class>.weight, or its rotation blk.N.<class>.weight:rotated
  std::vector<std::string> parts = split(weight.substr(0, weight.find(':')), '.');
  if (parts.size() == 4 && parts[0] == "blk" && parts[3] == "weight") {
    const auto &c = tensorClasses();
    if (std::find(c.begin(), c.begin() + 7, parts[2]) != c.begin() + 7)
      return parts[2];
  }
  return "";
}

uint32_t Rules::formatOf(const std::string &cls, bool *explicitly) const {
  auto it = byClass.find(cls);
  if (explicitly)
    *explicitly = it != byClass.end();
  return it != byClass.end() ? it->second : defaultFormat;
}

bool parseRules(const std::string &text, Rules &out, std::string &error) {
  static const std::map<std::string, std::vector<std::string>> groups = {
      {"attn_qkv", {"attn_q", "attn_k", "attn_v"}}, {"ffn", {"ffn_gate", "ffn_up", "ffn_down"}}};
  out = Rules();
  if (text.empty()) {
    error = "empty precision rules (expected class=format,...)";
    return false;
  }
  for (const std::string &item : split(text, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      error = "precision rule '" + item + "' is not class=format";
      return false;
    }
    std::string cls = item.substr(0, eq), fmt = item.substr(eq + 1);
    uint32_t id;
    if (!parseFormat(fmt, id)) {
      error = "unknown format '" + fmt + "' in rule '" + item + "' (expected " + kFormatList +
              ")";
      return false;
    }
    std::vector<std::string> targets;
    const auto &all = tensorClasses();
    if (cls == "default") {
      out.defaultFormat = id;
      continue;
    }
    if (auto g = groups.find(cls); g != groups.end())
      targets = g->second;
    else if (std::find(all.begin(), all.end(), cls) != all.end())
      targets = {cls};
    else {
      error = "unknown tensor class '" + cls + "' (expected attn_q, attn_k, attn_v, attn_qkv, "
              "attn_output, ffn_gate, ffn_up, ffn_down, ffn, embedding, output, norms or "
              "default)";
      return false;
    }
    for (const std::string &t : targets) {
      if (t == "norms" && !normFormat(id)) {
        error = "norms can be f32 or f16, not " + fmt;
        return false;
      }
      out.byClass[t] = id;
    }
  }
  return true;
}

bool parseMap(const std::string &text, std::map<std::string, uint32_t> &out,
              std::string &error) {
  out.clear();
  if (text.empty())
    return true;
  for (const std::string &item : split(text, ',')) {
    size_t eq = item.rfind('=');
    uint32_t id;
    if (eq == std::string::npos || eq == 0) {
      error = "precision map entry '" + item + "' is not weight=format";
      return false;
    }
    if (!parseFormat(item.substr(eq + 1), id)) {
      error = "unknown format '" + item.substr(eq + 1) + "' for weight '" +
              item.substr(0, eq) + "' (expected " + kFormatList + ")";
      return false;
    }
    if (!out.emplace(item.substr(0, eq), id).second) {
      error = "weight '" + item.substr(0, eq) + "' is named twice in the precision map";
      return false;
    }
  }
  return true;
}

std::string printMap(const std::map<std::string, uint32_t> &map) {
  std::string s;
  for (const auto &[name, id] : map)
    s += (s.empty() ? "" : ",") + name + "=" + formatName(id);
  return s;
}

uint64_t storedBytes(uint32_t format, uint64_t rowLength, uint64_t rows, bool linearLayout,
                     uint32_t packRows, uint64_t rowAlign) {
  const uint64_t block = kiln_ggml_block_elems(format);
  if (block == 0)
    return 0;
  const uint64_t padded = (rowLength + block - 1) / block * block;
  const uint64_t rowBytes = padded / block * kiln_ggml_block_bytes(format);
  // q3_0 and the K-quants keep rows of whole blocks (kiln-assign-layout)
  if (!linearLayout || format == KILN_TYPE_Q3_0 || kquant(format))
    return rowBytes * rows;
  if (const uint32_t packed = packRows ? kiln_packed_type(format, packRows) : 0)
    return (rows + packRows - 1) / packRows * kiln_packed_group_bytes(packed, padded);
  return (rowBytes + rowAlign - 1) / rowAlign * rowAlign * rows; // rows64
}

} // namespace kiln::precision
