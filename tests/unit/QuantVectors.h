// Reader for ../shared/testdata/ggml-quant-vectors.bin (format in its README): ggml's own
// input, bytes and dequantised values for every GGUF block format - the external oracle
// of the decoder (DequantTest) and quantizer (QuantizeTest) tests.
#ifndef KILN_TESTS_UNIT_QUANTVECTORS_H
#define KILN_TESTS_UNIT_QUANTVECTORS_H

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "TestPaths.h"

namespace kiln::test {

struct VectorRecord {
  std::string name;
  int32_t type = 0, nrows = 0, ncols = 0, rowBytes = 0, block = 0;
  std::vector<float> input;        // nrows * ncols, what ggml quantized
  std::vector<uint8_t> quantized;  // nrows * rowBytes, ggml's bytes
  std::vector<float> dequantized;  // nrows * ncols, ggml's decoding of those bytes
};

struct VectorFile {
  std::string error; // empty when parsed
  std::vector<VectorRecord> records;
};

inline std::string vectorsPath() { return testdataDir() + "/ggml-quant-vectors.bin"; }

// Parses the whole file with a bounds-checked cursor; `error` says what is wrong.
inline VectorFile parseVectors(const std::string &path) {
  VectorFile f;
  auto fail = [&f](std::string msg) {
    f.error = std::move(msg);
    return f;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("cannot open " + path);
  const std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), {});
  size_t pos = 0;
  auto take = [&](void *dst, size_t n) {
    if (n > buf.size() - pos)
      return false;
    std::memcpy(dst, buf.data() + pos, n);
    pos += n;
    return true;
  };
  char magic[4];
  int32_t count = 0;
  if (!take(magic, 4) || std::memcmp(magic, "KQV1", 4) != 0 || !take(&count, 4) || count < 0)
    return fail("bad header");
  for (int32_t r = 0; r < count; ++r) {
    VectorRecord rec;
    char name[17] = {};
    int32_t hdr[5];
    if (!take(name, 16) || !take(hdr, sizeof hdr))
      return fail("truncated record header " + std::to_string(r));
    rec.name = name;
    rec.type = hdr[0], rec.nrows = hdr[1], rec.ncols = hdr[2], rec.rowBytes = hdr[3],
    rec.block = hdr[4];
    if (rec.nrows <= 0 || rec.ncols <= 0 || rec.rowBytes <= 0 || rec.nrows > 1024 ||
        rec.ncols > (1 << 20) || rec.rowBytes > (1 << 24))
      return fail("implausible sizes in record " + rec.name);
    const size_t nvals = size_t(rec.nrows) * size_t(rec.ncols);
    rec.input.resize(nvals);
    rec.quantized.resize(size_t(rec.nrows) * size_t(rec.rowBytes));
    rec.dequantized.resize(nvals);
    if (!take(rec.input.data(), nvals * 4) || !take(rec.quantized.data(), rec.quantized.size()) ||
        !take(rec.dequantized.data(), nvals * 4))
      return fail("truncated record " + rec.name);
    f.records.push_back(std::move(rec));
  }
  if (pos != buf.size())
    f.error = "trailing bytes after last record";
  return f;
}

// Parsed once per test binary.
inline const VectorFile &vectorFile() {
  static const VectorFile f = parseVectors(vectorsPath());
  return f;
}

} // namespace kiln::test

#endif // KILN_TESTS_UNIT_QUANTVECTORS_H
