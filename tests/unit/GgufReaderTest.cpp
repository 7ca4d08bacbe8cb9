// GGUF reader: round trips through GgufWriter and the real stories260K files.
#include "compiler/frontends/gguf/GgufFile.h"
#include "compiler/frontends/gguf/GgufWriter.h"
#include "kiln/quant.h"
#include "TestPaths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <unistd.h>

using namespace kiln::gguf;

namespace {

std::unique_ptr<GgufFile> parseOk(const std::vector<uint8_t> &bytes) {
  std::string err;
  auto f = GgufFile::parse(bytes.data(), bytes.size(), err);
  EXPECT_TRUE(f) << err;
  return f;
}

std::vector<uint8_t> iota(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(start + i);
  return v;
}

// A temporary directory removed (with its files) at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = kiln::test::envOr("TMPDIR", "/tmp") + "/kiln-gguf-XXXXXX";
    if (char *p = ::mkdtemp(tmpl.data()))
      path = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty())
      std::filesystem::remove_all(path, ec);
  }
};

} // namespace

TEST(GgufReader, ScalarRoundTrip) {
  GgufWriter w;
  w.addU8("t.u8", 250);
  w.addI8("t.i8", -128);
  w.addU16("t.u16", 65535);
  w.addI16("t.i16", -32768);
  w.addU32("t.u32", 4000000000u);
  w.addI32("t.i32", -2000000000);
  w.addU64("t.u64", std::numeric_limits<uint64_t>::max());
  w.addI64("t.i64", std::numeric_limits<int64_t>::min());
  w.addF32("t.f32", 1e-5f);
  w.addF64("t.f64", -3.25e300);
  w.addBool("t.true", true);
  w.addBool("t.false", false);
  w.addString("t.str", std::string("h\xc3\xa9llo\0x", 8)); // UTF-8 and an embedded NUL
  w.addString("t.empty", "");
  auto f = parseOk(w.toBytes());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->metadata().size(), 14u);
  EXPECT_EQ(f->find("t.u8")->type, ValueType::U8);
  EXPECT_EQ(f->find("t.u8")->u, 250u);
  EXPECT_EQ(f->find("t.i8")->i, -128);
  EXPECT_EQ(f->find("t.u16")->u, 65535u);
  EXPECT_EQ(f->find("t.i16")->i, -32768);
  EXPECT_EQ(f->find("t.u32")->u, 4000000000u);
  EXPECT_EQ(f->find("t.i32")->i, -2000000000);
  EXPECT_EQ(f->find("t.u64")->u, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f->find("t.i64")->i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->find("t.f32")->f, static_cast<double>(1e-5f));
  EXPECT_EQ(f->find("t.f64")->f, -3.25e300);
  EXPECT_EQ(f->find("t.true")->type, ValueType::Bool);
  EXPECT_EQ(f->find("t.true")->u, 1u);
  EXPECT_EQ(f->find("t.false")->u, 0u);
  EXPECT_EQ(f->find("t.str")->str, std::string("h\xc3\xa9llo\0x", 8));
  EXPECT_EQ(f->find("t.empty")->str, "");
  EXPECT_EQ(f->find("missing"), nullptr);
  EXPECT_TRUE(f->tensors().empty());

  uint64_t u = 0;
  double d = 0;
  EXPECT_TRUE(f->find("t.u32")->asU64(u));
  EXPECT_EQ(u, 4000000000u);
  EXPECT_FALSE(f->find("t.i8")->asU64(u)); // negative
  EXPECT_FALSE(f->find("t.true")->asU64(u));
  EXPECT_FALSE(f->find("t.true")->isInteger());
  EXPECT_TRUE(f->find("t.i64")->isInteger());
  EXPECT_TRUE(f->find("t.i32")->asF64(d));
  EXPECT_EQ(d, -2000000000.0);
  EXPECT_FALSE(f->find("t.str")->asF64(d));
  EXPECT_STREQ(valueTypeName(ValueType::F64), "f64");
}

TEST(GgufReader, ArrayRoundTrip) {
  GgufWriter w;
  w.setVersion(2); // same layout as 3
  w.addStringArray("t.tokens", {"<unk>", "", "\xe2\x96\x81the"});
  w.addF32Array("t.scores", {0.0f, -1.5f, 2.25f});
  w.addI32Array("t.types", {2, 3, -1});
  w.add("t.u8s", makeArray(ValueType::U8, {makeU8(1), makeU8(255)}));
  w.add("t.bools", makeArray(ValueType::Bool, {makeBool(true), makeBool(false)}));
  w.add("t.u64s", makeArray(ValueType::U64, {makeU64(1ull << 40)}));
  w.add("t.f64s", makeArray(ValueType::F64, {makeF64(0.125)}));
  w.add("t.empty", makeArray(ValueType::I16, {}));
  // [[["a"], []], [["b", "c"]]]
  Value a = makeArray(ValueType::String, {makeString("a")});
  Value e = makeArray(ValueType::String, {});
  Value bc = makeArray(ValueType::String, {makeString("b"), makeString("c")});
  w.add("t.nested", makeArray(ValueType::Array, {makeArray(ValueType::Array, {a, e}),
                                                  makeArray(ValueType::Array, {bc})}));
  // Exactly the supported depth: 8 levels of arrays around one i8.
  Value deep = makeI8(-7);
  for (int i = 0; i < 8; ++i)
    deep = makeArray(i == 0 ? ValueType::I8 : ValueType::Array, {deep});
  w.add("t.deep", deep);

  auto f = parseOk(w.toBytes());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->version(), 2u);
  const Value *tokens = f->find("t.tokens");
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->type, ValueType::Array);
  EXPECT_EQ(tokens->elemType, ValueType::String);
  ASSERT_EQ(tokens->array.size(), 3u);
  EXPECT_EQ(tokens->array[0].str, "<unk>");
  EXPECT_EQ(tokens->array[1].str, "");
  EXPECT_EQ(tokens->array[2].str, "\xe2\x96\x81the");
  EXPECT_EQ(f->find("t.scores")->array[1].f, -1.5);
  EXPECT_EQ(f->find("t.types")->array[2].i, -1);
  EXPECT_EQ(f->find("t.u8s")->array[1].u, 255u);
  EXPECT_EQ(f->find("t.bools")->array[0].u, 1u);
  EXPECT_EQ(f->find("t.u64s")->array[0].u, 1ull << 40);
  EXPECT_EQ(f->find("t.f64s")->array[0].f, 0.125);
  EXPECT_EQ(f->find("t.empty")->elemType, ValueType::I16);
  EXPECT_TRUE(f->find("t.empty")->array.empty());

  const Value *n = f->find("t.nested");
  ASSERT_TRUE(n);
  ASSERT_EQ(n->elemType, ValueType::Array);
  ASSERT_EQ(n->array.size(), 2u);
  ASSERT_EQ(n->array[0].array.size(), 2u);
  EXPECT_EQ(n->array[0].array[0].array[0].str, "a");
  EXPECT_TRUE(n->array[0].array[1].array.empty());
  EXPECT_EQ(n->array[0].array[1].elemType, ValueType::String);
  EXPECT_EQ(n->array[1].array[0].array[1].str, "c");

  const Value *v = f->find("t.deep");
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(v->type, ValueType::Array);
    ASSERT_EQ(v->array.size(), 1u);
    v = &v->array[0];
  }
  EXPECT_EQ(v->type, ValueType::I8);
  EXPECT_EQ(v->i, -7);
}

// Tensors of several types at several alignments, from memory and from disk.
class GgufAlignment : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufAlignment, TensorRoundTrip) {
  const uint32_t align = GetParam();
  const size_t q8Bytes = 2 * 34; // two q8_0 blocks of 32
  std::vector<uint8_t> a = iota(3 * 4 * 4, 1), b = iota(5 * 2, 100), c = iota(q8Bytes, 7);
  GgufWriter w(align);
  w.addString("general.architecture", "test");
  w.addTensor("a.f32", KILN_GGML_TYPE_F32, {3, 4}, a.data(), a.size());
  // made on demand (addTensorFill), as kiln synth's matrices are
  w.addTensorFill("b.f16", KILN_GGML_TYPE_F16, {5}, b.size(),
                  [&b](uint8_t *dst) { std::copy(b.begin(), b.end(), dst); });
  w.addTensor("c.q8_0", KILN_GGML_TYPE_Q8_0, {32, 1, 2, 1}, c.data(), c.size());
  std::vector<uint8_t> bytes = w.toBytes();

  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  std::string path = dir.path + "/t.gguf", err;
  ASSERT_TRUE(w.writeFile(path, err)) << err;
  // writeFile streams tensor by tensor; the file is the same bytes as toBytes
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {}), bytes);

  std::unique_ptr<GgufFile> fromMemory = parseOk(bytes);
  std::unique_ptr<GgufFile> fromDisk = GgufFile::open(path, err);
  ASSERT_TRUE(fromDisk) << err;
  for (const GgufFile *f : {fromMemory.get(), fromDisk.get()}) {
    ASSERT_TRUE(f);
    EXPECT_EQ(f->alignment(), align);
    EXPECT_EQ(f->fileSize(), bytes.size());
    ASSERT_EQ(f->tensors().size(), 3u);
    struct Expect { const char *name; std::vector<uint64_t> dims; uint32_t type;
                    const std::vector<uint8_t> *data; uint64_t elems; };
    for (const Expect &e : {Expect{"a.f32", {3, 4}, KILN_GGML_TYPE_F32, &a, 12},
                            Expect{"b.f16", {5}, KILN_GGML_TYPE_F16, &b, 5},
                            Expect{"c.q8_0", {32, 1, 2, 1}, KILN_GGML_TYPE_Q8_0, &c, 64}}) {
      const TensorInfo *t = f->findTensor(e.name);
      ASSERT_TRUE(t) << e.name;
      EXPECT_EQ(t->dims, e.dims);
      EXPECT_EQ(t->type, e.type);
      EXPECT_EQ(t->numElements(), e.elems);
      ASSERT_EQ(t->nbytes, e.data->size()) << e.name;
      EXPECT_EQ(t->offset % align, 0u);
      // A view into the image, aligned relative to its start, holding the written bytes.
      EXPECT_GE(t->data, f->bytes());
      EXPECT_LE(t->data + t->nbytes, f->bytes() + f->fileSize());
      EXPECT_EQ(static_cast<size_t>(t->data - f->bytes()) % align, 0u);
      EXPECT_EQ(std::vector<uint8_t>(t->data, t->data + t->nbytes), *e.data) << e.name;
    }
    EXPECT_EQ(&f->tensors()[0], f->findTensor("a.f32")); // file order is kept
    EXPECT_EQ(f->findTensor("nope"), nullptr);
  }
  // The mapping is page aligned, so data pointers are aligned in absolute terms too.
  for (const TensorInfo &t : fromDisk->tensors())
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % align, 0u) << t.name;
  if (align != 32)
    EXPECT_EQ(fromDisk->find("general.alignment")->u, align);
  else
    EXPECT_EQ(fromDisk->find("general.alignment"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Gguf, GgufAlignment, ::testing::Values(32u, 64u, 1u),
                         [](const auto &p) { return "align" + std::to_string(p.param); });

TEST(GgufReader, OpenMissingFile) {
  std::string err;
  EXPECT_FALSE(GgufFile::open("/nonexistent/kiln/x.gguf", err));
  EXPECT_NE(err.find("cannot open '/nonexistent/kiln/x.gguf'"), std::string::npos) << err;
}

TEST(GgufReader, Stories260K) {
  const std::string path = kiln::test::modelsDir() + "/stories260K.gguf";
  KILN_REQUIRE_FILE(path);
  std::string err;
  auto f = GgufFile::open(path, err);
  ASSERT_TRUE(f) << err;
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->metadata().size(), 19u);
  ASSERT_TRUE(f->find("general.architecture"));
  EXPECT_EQ(f->find("general.architecture")->str, "llama");
  uint64_t v = 0;
  ASSERT_TRUE(f->find("llama.block_count") && f->find("llama.block_count")->asU64(v));
  EXPECT_EQ(v, 5u);
  ASSERT_TRUE(f->find("llama.embedding_length")->asU64(v));
  EXPECT_EQ(v, 64u);
  ASSERT_TRUE(f->find("llama.context_length")->asU64(v));
  EXPECT_EQ(v, 128u); // the converter's default, see shared/models/README.md
  double eps = 0;
  ASSERT_TRUE(f->find("llama.attention.layer_norm_rms_epsilon")->asF64(eps));
  EXPECT_NEAR(eps, 1e-5, 1e-12);
  const Value *tokens = f->find("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->array.size(), 512u);
  EXPECT_EQ(tokens->array[0].str, "<unk>");
  EXPECT_EQ(tokens->array[1].str, "<s>");
  EXPECT_EQ(tokens->array[3].str, "<0x00>");
  EXPECT_EQ(f->find("tokenizer.ggml.scores")->array.size(), 512u);

  // token_embd, output_norm, output + 5 layers x (attn q/k/v/output/norm, ffn gate/down/up/norm).
  ASSERT_EQ(f->tensors().size(), 3u + 5u * 9u);
  const TensorInfo *emb = f->findTensor("token_embd.weight");
  ASSERT_TRUE(emb);
  EXPECT_EQ(emb->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(emb->type, KILN_GGML_TYPE_F32);
  EXPECT_EQ(emb->nbytes, 64u * 512u * 4u);
  const TensorInfo *down = f->findTensor("blk.4.ffn_down.weight");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->dims, (std::vector<uint64_t>{172, 64}));
  ASSERT_TRUE(f->findTensor("blk.2.attn_k.weight"));
  EXPECT_EQ(f->findTensor("blk.2.attn_k.weight")->dims, (std::vector<uint64_t>{64, 32}));
  uint64_t end = 0;
  for (const TensorInfo &t : f->tensors()) {
    EXPECT_GE(t.data, f->bytes()) << t.name;
    EXPECT_LE(t.data + t.nbytes, f->bytes() + f->fileSize()) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u) << t.name;
    end = std::max<uint64_t>(end, static_cast<uint64_t>(t.data - f->bytes()) + t.nbytes);
  }
  EXPECT_EQ(end, f->fileSize()); // the last tensor ends the file
  // F32 weights of a trained model: finite.
  const float *w = reinterpret_cast<const float *>(emb->data);
  for (size_t i = 0; i < 64; ++i)
    EXPECT_TRUE(std::isfinite(w[i]));
}

// llama.cpp's quantized copies: q8_0/q4_0 sizes must come out of kiln_ggml_row_bytes.
TEST(GgufReader, Stories260KQuantized) {
  for (const char *name : {"stories260K-Q8_0.gguf", "stories260K-Q4_0.gguf"}) {
    const std::string path = kiln::test::modelsDir() + "/" + name;
    KILN_REQUIRE_FILE(path);
    std::string err;
    auto f = GgufFile::open(path, err);
    ASSERT_TRUE(f) << name << ": " << err;
    ASSERT_EQ(f->tensors().size(), 48u) << name;
    const TensorInfo *q = f->findTensor("blk.0.attn_q.weight");
    ASSERT_TRUE(q);
    EXPECT_TRUE(q->type == KILN_GGML_TYPE_Q8_0 || q->type == KILN_GGML_TYPE_Q4_0) << q->type;
    EXPECT_EQ(f->findTensor("blk.0.ffn_down.weight")->type, KILN_GGML_TYPE_F32) << name;
    for (const TensorInfo &t : f->tensors())
      EXPECT_LE(t.data + t.nbytes, f->bytes() + f->fileSize()) << name << " " << t.name;
  }
}
