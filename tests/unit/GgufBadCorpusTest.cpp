// Bad-GGUF corpus: crafted broken files, each of which the reader must reject with a
// one-line message naming the problem. Built into kiln-gguf-corpus-asan (ASan + UBSan,
// any finding aborts), so it may only use KILN_GGUF_SOURCES and KILN_RUNTIME_SOURCES.
// Every file starts as the valid image from baseWriter() and is then corrupted, either
// through the writer (which checks nothing) or by patching bytes.
#include "compiler/frontends/gguf/GgufFile.h"
#include "compiler/frontends/gguf/GgufWriter.h"
#include "kiln/quant.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <unistd.h>

using namespace kiln::gguf;

namespace {

using Bytes = std::vector<uint8_t>;
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// Header fields (magic, version, n_tensors, n_kv) are at fixed offsets.
constexpr size_t kVersionAt = 4, kNTensorsAt = 8, kNKvAt = 16, kFirstKeyAt = 24;

GgufWriter baseWriter() {
  GgufWriter w;
  w.addString("general.architecture", "llama");
  w.addU32("llama.block_count", 5);
  w.addStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
  return w;
}

// tensor_a: f32 [8, 2] at data offset 0, tensor_b: f32 [16] at 64 (64 bytes each).
void addTensors(GgufWriter &w, std::vector<uint64_t> dimsA = {8, 2},
                uint32_t typeA = KILN_GGML_TYPE_F32, const char *nameB = "tensor_b") {
  static const Bytes a(64, 0x11), b(64, 0x22);
  w.addTensor("tensor_a", typeA, dimsA, a.data(), a.size());
  w.addTensor(nameB, KILN_GGML_TYPE_F32, {16}, b.data(), b.size());
}

Bytes valid() {
  GgufWriter w = baseWriter();
  addTensors(w);
  return w.toBytes();
}

// Position just past the first occurrence of `s` in the image (a key or tensor name).
size_t after(const Bytes &b, const std::string &s) {
  for (size_t i = 0; i + s.size() <= b.size(); ++i)
    if (std::memcmp(b.data() + i, s.data(), s.size()) == 0)
      return i + s.size();
  ADD_FAILURE() << "'" << s << "' not in the image";
  return 0;
}

template <typename T> Bytes patch(Bytes b, size_t at, T v) {
  if (at + sizeof(T) <= b.size())
    std::memcpy(b.data() + at, &v, sizeof(T));
  else
    ADD_FAILURE() << "patch at " << at << " outside the image";
  return b;
}

Bytes cut(Bytes b, size_t n) {
  b.resize(std::min(n, b.size()));
  return b;
}

// Tensor info fields of a 1- or 2-dim tensor named `name`: n_dims is right after the name.
size_t tensorOffsetField(const Bytes &b, const std::string &name, uint32_t nDims) {
  return after(b, name) + 4 + 8 * nDims + 4;
}

struct BadCase {
  std::string name;
  Bytes bytes;
  std::string expect; // a phrase the error must contain
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.name; }

std::vector<BadCase> corpus() {
  std::vector<BadCase> cs;
  const Bytes ok = valid();
  auto with = [](auto edit) {
    GgufWriter w = baseWriter();
    edit(w);
    return w.toBytes();
  };

  // Header.
  cs.push_back({"BadMagic", patch<char>(ok, 3, 'X'), "bad magic 'GGUX' (expected 'GGUF')"});
  cs.push_back({"Version1", patch<uint32_t>(ok, kVersionAt, 1), "unsupported GGUF version 1"});
  cs.push_back({"Version99", patch<uint32_t>(ok, kVersionAt, 99), "unsupported GGUF version 99"});
  cs.push_back({"BigEndianVersion", patch<uint32_t>(ok, kVersionAt, 0x03000000u), "big-endian"});
  cs.push_back({"EmptyFile", {}, "truncated file: header magic needs 4 bytes"});
  cs.push_back({"TruncatedInHeader", cut(ok, 10),
                "truncated file: header n_tensors needs 8 bytes at offset 8 but only 2 remain"});
  cs.push_back({"HugeNKv", patch<uint64_t>(ok, kNKvAt, 1ull << 40),
                "header n_kv 1099511627776 is too large"});
  cs.push_back({"HugeNTensors", patch<uint64_t>(ok, kNTensorsAt, kU64Max),
                "header n_tensors 18446744073709551615 is too large"});

  // Metadata: truncation and lengths.
  // Entry #2, tokenizer.ggml.tokens (a cut much earlier leaves too few bytes for the header
  // counts, the HugeNKv case): its key length follows llama.block_count's type and u32.
  const size_t key2At = after(ok, "llama.block_count") + 4 + 4;
  cs.push_back({"TruncatedInKeyLength", cut(ok, key2At + 3),
                "truncated file: metadata entry #2 key needs 8 bytes at offset 102 but only 3"});
  cs.push_back({"TruncatedInKey", cut(ok, key2At + 8 + 5),
                "string length 21 of metadata entry #2 key at offset 102 exceeds the 5 bytes left"});
  cs.push_back({"TruncatedInValue", cut(ok, after(ok, "llama.block_count") + 4 + 2),
                "truncated file: metadata key 'llama.block_count' value needs 4 bytes"});
  cs.push_back({"TruncatedInArray", cut(ok, after(ok, "tokenizer.ggml.tokens") + 4 + 4 + 3),
                "truncated file: metadata key 'tokenizer.ggml.tokens' array count needs 8"});
  cs.push_back({"HugeKeyLength", patch<uint64_t>(ok, kFirstKeyAt, kU64Max),
                "string length 18446744073709551615 of metadata entry #0 key"});
  cs.push_back({"HugeStringLength",
                patch<uint64_t>(ok, after(ok, "general.architecture") + 4, 1ull << 62),
                "string length 4611686018427387904 of metadata key 'general.architecture' value"});
  cs.push_back({"HugeArrayCount",
                patch<uint64_t>(ok, after(ok, "tokenizer.ggml.tokens") + 4 + 4, 1ull << 60),
                "array count 1152921504606846976 of metadata key 'tokenizer.ggml.tokens'"});
  {
    // [[1, 2]] with the inner count patched: type, elem type, count, inner elem type.
    Bytes b = with([](GgufWriter &w) {
      w.add("t.nested", makeArray(ValueType::Array,
                                  {makeArray(ValueType::U32, {makeU32(1), makeU32(2)})}));
    });
    cs.push_back({"HugeNestedArrayCount",
                  patch<uint64_t>(b, after(b, "t.nested") + 4 + 4 + 8 + 4, kU64Max / 2),
                  "array count 9223372036854775807 of metadata key 't.nested'"});
  }

  // Metadata: values.
  cs.push_back({"ArraysTooDeep", with([](GgufWriter &w) {
                  Value v = makeU8(1);
                  for (int i = 0; i < 9; ++i)
                    v = makeArray(i == 0 ? ValueType::U8 : ValueType::Array, {v});
                  w.add("t.deep", v);
                }),
                "arrays nested deeper than 8 levels in metadata key 't.deep'"});
  cs.push_back({"UnknownValueType",
                with([](GgufWriter &w) { w.addRaw("t.bad", 13, {0, 0, 0, 0}); }),
                "unknown value type 13 for metadata key 't.bad'"});
  cs.push_back({"UnknownArrayElementType", with([](GgufWriter &w) {
                  w.addRaw("t.arr", 9, {42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
                }),
                "unknown array element type 42 for metadata key 't.arr'"});
  cs.push_back({"BadBool", with([](GgufWriter &w) { w.addRaw("t.flag", 7, {2}); }),
                "bad bool value 2 for metadata key 't.flag'"});
  cs.push_back({"DuplicateKey", with([](GgufWriter &w) { w.addU32("llama.block_count", 6); }),
                "duplicate metadata key 'llama.block_count'"});
  cs.push_back({"EmptyKey", with([](GgufWriter &w) { w.addU32("", 1); }),
                "empty metadata key in entry #3"});
  cs.push_back({"AlignmentZero", with([](GgufWriter &w) { w.addU32("general.alignment", 0); }),
                "bad general.alignment 0 (must be a nonzero power of two)"});
  cs.push_back({"AlignmentThree", with([](GgufWriter &w) { w.addU32("general.alignment", 3); }),
                "bad general.alignment 3"});
  cs.push_back({"AlignmentNotU32",
                with([](GgufWriter &w) { w.addU64("general.alignment", 32); }),
                "general.alignment has type u64 (must be u32)"});

  // Tensor infos.
  cs.push_back({"TruncatedInTensorInfo", cut(ok, after(ok, "tensor_b") + 4 + 3),
                "truncated file: tensor 'tensor_b' dims needs 8 bytes"});
  cs.push_back({"HugeTensorNameLength", patch<uint64_t>(ok, after(ok, "tensor_b") - 16, kU64Max),
                "string length 18446744073709551615 of tensor info #1 name"});
  cs.push_back({"DuplicateTensorName",
                with([](GgufWriter &w) { addTensors(w, {8, 2}, KILN_GGML_TYPE_F32, "tensor_a"); }),
                "duplicate tensor name 'tensor_a'"});
  cs.push_back({"EmptyTensorName",
                with([](GgufWriter &w) { addTensors(w, {8, 2}, KILN_GGML_TYPE_F32, ""); }),
                "empty tensor name in tensor info #1"});
  cs.push_back({"NDims0", with([](GgufWriter &w) { addTensors(w, {}); }),
                "tensor 'tensor_a' has n_dims 0"});
  cs.push_back({"NDims5", with([](GgufWriter &w) { addTensors(w, {2, 2, 2, 2, 1}); }),
                "tensor 'tensor_a' has n_dims 5"});
  cs.push_back({"ZeroDim", with([](GgufWriter &w) { addTensors(w, {8, 0}); }),
                "tensor 'tensor_a' dimension 1 is 0"});
  cs.push_back({"DimsProductOverflow",
                with([](GgufWriter &w) { addTensors(w, {1ull << 32, 1ull << 32}); }),
                "tensor 'tensor_a' element count overflows"});
  cs.push_back({"ByteSizeOverflow", with([](GgufWriter &w) { addTensors(w, {1ull << 62}); }),
                "tensor 'tensor_a' byte size overflows"});
  cs.push_back({"UnknownTensorType",
                with([](GgufWriter &w) { addTensors(w, {8, 2}, 99); }),
                "tensor 'tensor_a' has unknown or unsupported ggml type 99"});
  // kiln's own formats (ids from 1000 up) are never ggml types in a GGUF file
  cs.push_back({"KilnOwnTypeInGguf",
                with([](GgufWriter &w) { addTensors(w, {32, 2}, KILN_TYPE_Q3_0); }),
                "tensor 'tensor_a' has unknown or unsupported ggml type 1100"});
  cs.push_back({"RowNotBlockMultiple",
                with([](GgufWriter &w) { addTensors(w, {10, 2}, KILN_GGML_TYPE_Q8_0); }),
                "tensor 'tensor_a' row length 10 is not a multiple of the q8_0 block size 32"});
  cs.push_back({"MisalignedTensorOffset",
                patch<uint64_t>(ok, tensorOffsetField(ok, "tensor_b", 1), 16),
                "tensor 'tensor_b' data offset 16 (stored at file offset"});

  // Tensor data.
  cs.push_back({"TensorOffsetPastEnd",
                patch<uint64_t>(ok, tensorOffsetField(ok, "tensor_b", 1), 1u << 20),
                "tensor 'tensor_b' data offset 1048576 is past the end of the file"});
  cs.push_back({"TensorOffsetHuge",
                patch<uint64_t>(ok, tensorOffsetField(ok, "tensor_b", 1), kU64Max - 31),
                "tensor 'tensor_b' data offset 18446744073709551584 is past the end"});
  cs.push_back({"TensorDataPastEnd",
                patch<uint64_t>(ok, after(ok, "tensor_b") + 4, 32), // [16] -> [32]
                "tensor 'tensor_b' data runs past the end of the file"});
  cs.push_back({"TruncatedInData", cut(ok, ok.size() - 10),
                "tensor 'tensor_b' data runs past the end of the file"});
  {
    // Cut just after the tensor infos, inside the padding before the data.
    size_t infosEnd = tensorOffsetField(ok, "tensor_b", 1) + 8;
    cs.push_back({"TruncatedBeforeData", cut(ok, infosEnd + 1),
                  "truncated file: data section starts at offset"});
  }
  cs.push_back({"OverlappingTensors",
                patch<uint64_t>(ok, after(ok, "tensor_a") + 4 + 8, 4), // [8, 2] -> [8, 4]
                "tensors 'tensor_a' and 'tensor_b' overlap"});
  return cs;
}

class GgufBadCorpus : public ::testing::TestWithParam<BadCase> {
protected:
  static void SetUpTestSuite() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-gguf-bad-XXXXXX").string();
    if (char *p = ::mkdtemp(tmpl.data()))
      dir_ = p;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty())
      std::filesystem::remove_all(dir_, ec);
  }
  static std::string dir_;
};
std::string GgufBadCorpus::dir_;

TEST_P(GgufBadCorpus, Rejected) {
  const BadCase &c = GetParam();
  std::string err;
  // The vector holds exactly the file, so ASan sees any read past its end.
  EXPECT_FALSE(GgufFile::parse(c.bytes.data(), c.bytes.size(), err));
  std::cout << "[" << c.name << "] " << err << "\n";
  EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "'";
  EXPECT_EQ(err.find('\n'), std::string::npos) << "not one line";

  // The same bytes through open()/mmap give the same message.
  ASSERT_FALSE(dir_.empty());
  std::string path = dir_ + "/" + c.name + ".gguf", fileErr;
  FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  if (!c.bytes.empty()) { // fwrite's buffer must not be null, even for 0 bytes
    ASSERT_EQ(std::fwrite(c.bytes.data(), 1, c.bytes.size(), f), c.bytes.size());
  }
  ASSERT_EQ(std::fclose(f), 0);
  EXPECT_FALSE(GgufFile::open(path, fileErr));
  EXPECT_EQ(fileErr, err);
}

INSTANTIATE_TEST_SUITE_P(Gguf, GgufBadCorpus, ::testing::ValuesIn(corpus()),
                         [](const auto &p) { return p.param.name; });

TEST(GgufBadCorpusMeta, BaseFileIsValidAndCorpusIsLarge) {
  Bytes ok = valid();
  std::string err;
  auto f = GgufFile::parse(ok.data(), ok.size(), err);
  ASSERT_TRUE(f) << err;
  EXPECT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->findTensor("tensor_b")->offset, 64u);
  EXPECT_GE(corpus().size(), 24u);
}

// Every proper prefix of the valid file is rejected, and nothing reads past it.
TEST(GgufBadCorpusMeta, EveryTruncationFails) {
  Bytes ok = valid();
  for (size_t n = 0; n < ok.size(); ++n) {
    Bytes prefix(ok.begin(), ok.begin() + n);
    std::string err;
    EXPECT_FALSE(GgufFile::parse(prefix.data(), prefix.size(), err)) << n;
    EXPECT_FALSE(err.empty()) << n;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// Flipping bits anywhere before the tensor data either still parses or fails cleanly;
// the sanitizers catch anything worse.
TEST(GgufBadCorpusMeta, BitFlipsNeverCrash) {
  Bytes ok = valid();
  size_t dataStart = ok.size() - 128;
  size_t rejected = 0;
  for (size_t i = 0; i < dataStart; ++i)
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
      Bytes b = ok;
      b[i] ^= mask;
      std::string err;
      if (!GgufFile::parse(b.data(), b.size(), err)) {
        ++rejected;
        EXPECT_FALSE(err.empty());
        EXPECT_EQ(err.find('\n'), std::string::npos) << err;
      }
    }
  EXPECT_GT(rejected, 0u);
  std::cout << rejected << " of " << dataStart * 4 << " header bit flips rejected\n";
}

// Model-level cases (valid GGUF, wrong model) are in LlamaGgufCorpusTest.cpp.

} // namespace
