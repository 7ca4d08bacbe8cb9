// Test artifacts for the runtime tests: a valid .kiln built with the compiler's
// ArtifactWriter around the fake model code (RuntimeFakeModel.c, a shared object built by
// CMake), and helpers to corrupt, write and open such files.
#ifndef KILN_TESTS_UNIT_RUNTIMEFAKEARTIFACT_H
#define KILN_TESTS_UNIT_RUNTIMEFAKEARTIFACT_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "compiler/artifact/ArtifactWriter.h"
#include "kiln/artifact.h"
#include "kiln/kiln.h"

namespace kiln::test {

constexpr uint32_t kFakeMaxCtx = 64, kFakeMaxBatch = 8;

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// <unk> <s> </s>, the 256 byte tokens, "▁", a..z and the pieces of "▁hello" / "▁world".
inline artifact::TokenizerRecord fakeTokenizer() {
  artifact::TokenizerRecord t;
  auto add = [&](const std::string &s, float score, int32_t type) {
    t.tokens.push_back(s);
    t.scores.push_back(score);
    t.types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, 0, 6);
  }
  const std::string sp = "\xE2\x96\x81";
  add(sp, -1, 1);
  for (char c = 'a'; c <= 'z'; ++c)
    add(std::string(1, c), -2, 1);
  const char *words[] = {"hello", "world"};
  for (const char *w : words)
    for (size_t n = 1; n <= std::strlen(w); ++n)
      add(sp + std::string(w, n), -3.0f + float(n) * 0.1f, 1);
  t.bosId = 1;
  t.eosId = 2;
  t.unkId = 0;
  return t;
}

// The fake code is built for the machine the tests run on (x86-64, or aarch64 under
// qemu in the cross build): the target says so.
#if defined(__aarch64__)
constexpr const char *kFakeTargetName = "aarch64-fake";
constexpr const char *kOtherIsaTriple = "x86_64-linux-android";
#else
constexpr const char *kFakeTargetName = "x86-64-fake";
constexpr const char *kOtherIsaTriple = "aarch64-linux-android";
#endif

inline artifact::ArtifactContents fakeContents() {
  artifact::ArtifactContents c;
  c.target.name = kFakeTargetName;
#if defined(__aarch64__)
  c.target.triple = "aarch64-unknown-linux-gnu";
  c.target.cpu = "generic";
  c.target.features = {"neon", "+fp-armv8"};
#else
  c.target.triple = "x86_64-unknown-linux-gnu";
  c.target.cpu = "x86-64";
  c.target.features = {"sse2", "+cx8"};
#endif
  c.tokenizer = fakeTokenizer();
  const uint32_t vocab = uint32_t(c.tokenizer.tokens.size());
  c.config.vocabSize = vocab;
  c.config.dim = 8;
  c.config.numLayers = 1;
  c.config.numHeads = 2;
  c.config.numKvHeads = 1;
  c.config.headDim = 4;
  c.config.ffnDim = 16;
  c.config.contextLength = 128;
  c.config.ropeDims = 4;
  c.memory.scratchBytes = 256;
  c.memory.kvBytes = kFakeMaxCtx * 4;
  c.memory.kvBytesPerToken = 4;
  c.memory.maxBatch = kFakeMaxBatch;
  c.memory.maxCtx = kFakeMaxCtx;
  c.memory.weightBytesPerToken = 12345;
  c.weights.assign(64 + size_t(vocab) * 8 * 4, 0);
  const uint32_t head[3] = {0x454B4146u, vocab, kFakeMaxCtx};
  std::memcpy(c.weights.data(), head, sizeof head);
  for (size_t i = 64; i < c.weights.size(); ++i)
    c.weights[i] = uint8_t(i * 31);
  artifact::TensorRecord t;
  t.name = "token_embd.weight";
  t.shape = {8, vocab};
  t.paddedRowLength = 8;
  t.rowStride = 32;
  t.offset = 64;
  t.size = uint64_t(vocab) * 32;
  c.tensors.push_back(t);
  c.code = readBytes(KILN_FAKE_MODEL_SO);
  return c;
}

inline std::vector<uint8_t> fakeArtifact() { return artifact::serializeArtifact(fakeContents()); }

inline kiln_artifact_preamble_t preambleOf(const std::vector<uint8_t> &f) {
  kiln_artifact_preamble_t p;
  std::memcpy(&p, f.data(), sizeof p);
  return p;
}

// Recomputes the header checksum in the preamble (after a deliberate header edit).
inline void rehashHeader(std::vector<uint8_t> &f) {
  kiln_artifact_preamble_t p = preambleOf(f);
  p.header_xxh64 = kiln_xxh64(f.data() + p.header_offset, p.header_size);
  std::memcpy(f.data(), &p, sizeof p);
}

// Replaces the one occurrence of `from` (8 bytes, little-endian) in the header by `to`
// and fixes the checksum, so only the edited value is wrong.
inline void patchHeaderU64(std::vector<uint8_t> &f, uint64_t from, uint64_t to) {
  kiln_artifact_preamble_t p = preambleOf(f);
  size_t hits = 0, at = 0;
  for (size_t i = p.header_offset; i + 8 <= p.header_offset + p.header_size; ++i)
    if (std::memcmp(f.data() + i, &from, 8) == 0)
      ++hits, at = i;
  ASSERT_EQ(hits, 1u) << "value " << from << " is not unique in the header";
  std::memcpy(f.data() + at, &to, 8);
  rehashHeader(f);
}

// A file in the test's temporary directory, removed when it goes out of scope.
class TempFile {
public:
  explicit TempFile(const std::vector<uint8_t> &bytes) {
    const char *dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/kiln-rt-test-XXXXXX";
    int fd = mkstemp(path_.data());
    EXPECT_GE(fd, 0);
    if (fd >= 0) {
      EXPECT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
      close(fd);
    }
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

struct OpenResult {
  kiln_status_t status;
  std::string message;
};

// Opens the bytes as an artifact (closing it again on success), mapped or copied.
inline OpenResult openBytes(const std::vector<uint8_t> &bytes,
                            const kiln_allocator_t *alloc = nullptr,
                            uint32_t weights_memory = KILN_WEIGHTS_MAPPED) {
  TempFile f(bytes);
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  kiln_artifact_options_t o = kiln_artifact_options_default();
  o.allocator = alloc;
  o.weights_memory = weights_memory;
  kiln_status_t st = kiln_artifact_open_with(f.path().c_str(), &o, &a, &err);
  EXPECT_EQ(st, err.status);
  EXPECT_EQ(st == KILN_STATUS_OK, a != nullptr);
  kiln_artifact_close(a);
  return {st, err.message};
}

} // namespace kiln::test

#endif // KILN_TESTS_UNIT_RUNTIMEFAKEARTIFACT_H
