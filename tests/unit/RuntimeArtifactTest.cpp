// runtime-min loader: kiln_artifact_open on valid and damaged artifacts. Every damaged
// file must give a non-zero status and a message saying what is wrong - never a crash
// (this file also runs under ASan/UBSan, see CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "kiln/abi.h"
#include "tests/unit/RuntimeFakeArtifact.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#elif defined(__x86_64__)
#include <cpuid.h>
#endif

using namespace kiln::test;
using kiln::artifact::ArtifactContents;
using kiln::artifact::serializeArtifact;

namespace {

#define EXPECT_FAILS_WITH(result, text)                                                  \
  do {                                                                                   \
    OpenResult r_ = (result);                                                            \
    EXPECT_NE(r_.status, KILN_STATUS_OK);                                                \
    EXPECT_NE(r_.message.find(text), std::string::npos) << "message: " << r_.message;    \
  } while (0)

TEST(RuntimeArtifact, OpensFakeArtifact) {
  std::vector<uint8_t> bytes = fakeArtifact();
  TempFile f(bytes);
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  ASSERT_EQ(kiln_artifact_open(f.path().c_str(), nullptr, &a, &err), KILN_STATUS_OK)
      << err.message;
  EXPECT_STREQ(err.message, "");
  kiln_artifact_info_t info;
  kiln_artifact_info(a, &info);
  EXPECT_STREQ(info.target_name, kFakeTargetName);
  EXPECT_STREQ(info.arch, "llama");
  EXPECT_EQ(info.vocab_size, fakeTokenizer().tokens.size());
  EXPECT_EQ(info.max_ctx, kFakeMaxCtx);
  EXPECT_EQ(info.max_batch, kFakeMaxBatch);
  EXPECT_EQ(info.weight_bytes_per_token, 12345u);
  EXPECT_EQ(info.num_tensors, 1u);
  EXPECT_EQ(info.bos_id, 1);
  EXPECT_EQ(info.eos_id, 2);
  EXPECT_EQ(info.file_bytes, bytes.size());
  kiln_artifact_close(a);
}

// The compiler streams the file section by section from weights it does not copy
// (weightsRef); the result must be the image serializeArtifact builds, byte for byte.
TEST(RuntimeArtifact, StreamedFileEqualsImage) {
  const ArtifactContents owned = fakeContents();
  ArtifactContents borrowed = owned;
  const std::vector<uint8_t> weights = borrowed.weights;
  borrowed.weights.clear();
  borrowed.weightsRef = &weights;
  const std::vector<uint8_t> image = serializeArtifact(owned);
  EXPECT_EQ(serializeArtifact(borrowed), image);
  TempFile f({});
  std::string error;
  ASSERT_TRUE(kiln::artifact::writeArtifact(borrowed, f.path(), error)) << error;
  std::ifstream in(f.path(), std::ios::binary);
  const std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  EXPECT_EQ(written, image);
  EXPECT_FALSE(kiln::artifact::writeArtifact(owned, f.path() + "/not-a-dir/a.kiln", error));
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
}

TEST(RuntimeArtifact, LoadsCodeThroughTemporaryFile) {
  setenv("KILN_NO_MEMFD", "1", 1);
  OpenResult r = openBytes(fakeArtifact());
  unsetenv("KILN_NO_MEMFD");
  EXPECT_EQ(r.status, KILN_STATUS_OK) << r.message;
}

// KILN_WEIGHTS_HUGE_PAGES reads the file into a copy of its own: the same bytes, verified
// the same way, read-only, and damage is still refused.
TEST(RuntimeArtifact, OpensIntoHugePages) {
  const std::vector<uint8_t> bytes = fakeArtifact();
  TempFile f(bytes);
  kiln_artifact_options_t o = kiln_artifact_options_default();
  EXPECT_EQ(o.allocator, nullptr);
  EXPECT_EQ(o.weights_memory, uint32_t(KILN_WEIGHTS_MAPPED));
  kiln_artifact_t *mapped = nullptr, *copied = nullptr;
  kiln_error_t err;
  ASSERT_EQ(kiln_artifact_open_with(f.path().c_str(), &o, &mapped, &err), KILN_STATUS_OK)
      << err.message;
  o.weights_memory = KILN_WEIGHTS_HUGE_PAGES;
  ASSERT_EQ(kiln_artifact_open_with(f.path().c_str(), &o, &copied, &err), KILN_STATUS_OK)
      << err.message;
  kiln_artifact_info_t im, ic;
  kiln_artifact_info(mapped, &im);
  kiln_artifact_info(copied, &ic);
  EXPECT_EQ(im.weights_memory, uint32_t(KILN_WEIGHTS_MAPPED));
  EXPECT_EQ(ic.weights_memory, uint32_t(KILN_WEIGHTS_HUGE_PAGES));
  EXPECT_EQ(ic.file_bytes, bytes.size());
  ASSERT_EQ(im.weights_bytes, ic.weights_bytes);
  ASSERT_GT(ic.weights_bytes, 0u);
  EXPECT_NE(im.weights_data, ic.weights_data);
  EXPECT_EQ(memcmp(im.weights_data, ic.weights_data, ic.weights_bytes), 0);
  const std::vector<uint8_t> weights(ic.weights_data, ic.weights_data + ic.weights_bytes);
  EXPECT_EQ(std::string(im.target_name), std::string(ic.target_name));
  // a write into the copy faults, as it does into the read-only mapping
  uint8_t *w = const_cast<uint8_t *>(ic.weights_data);
  EXPECT_DEATH(w[0] ^= 1, "");
  kiln_artifact_close(mapped);
  kiln_artifact_close(copied);

  const size_t cut = bytes.size() / 2;
  EXPECT_FAILS_WITH(openBytes({bytes.begin(), bytes.begin() + long(cut)}, nullptr,
                              KILN_WEIGHTS_HUGE_PAGES),
                    "truncated");
  const auto at = std::search(bytes.begin(), bytes.end(), weights.begin(), weights.end());
  ASSERT_NE(at, bytes.end());
  std::vector<uint8_t> flipped = bytes;
  flipped[size_t(at - bytes.begin())] ^= 0x40;
  EXPECT_FAILS_WITH(openBytes(flipped, nullptr, KILN_WEIGHTS_HUGE_PAGES),
                    "(weights): checksum mismatch");
}

TEST(RuntimeArtifact, RefusesUnknownWeightsMemory) {
  TempFile f(fakeArtifact());
  kiln_artifact_options_t o = kiln_artifact_options_default();
  o.weights_memory = 7;
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  EXPECT_EQ(kiln_artifact_open_with(f.path().c_str(), &o, &a, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("weights_memory 7"), std::string::npos)
      << err.message;
  EXPECT_EQ(a, nullptr);
  o.weights_memory = KILN_WEIGHTS_HUGE_PAGES;
  EXPECT_EQ(kiln_artifact_open_with("/nonexistent/x.kiln", &o, &a, &err), KILN_STATUS_IO_ERROR);
  EXPECT_NE(std::string(err.message).find("cannot open"), std::string::npos) << err.message;
  EXPECT_EQ(kiln_artifact_open_with(f.path().c_str(), nullptr, &a, &err), KILN_STATUS_OK)
      << err.message;
  kiln_artifact_close(a);
}

TEST(RuntimeArtifact, MissingFile) {
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  EXPECT_EQ(kiln_artifact_open("/nonexistent/x.kiln", nullptr, &a, &err), KILN_STATUS_IO_ERROR);
  EXPECT_NE(std::string(err.message).find("cannot open"), std::string::npos);
  EXPECT_EQ(a, nullptr);
  EXPECT_EQ(kiln_artifact_open(nullptr, nullptr, &a, nullptr), KILN_STATUS_INVALID_ARGUMENT);
}

TEST(RuntimeArtifact, TruncatedAnywhere) {
  const std::vector<uint8_t> bytes = fakeArtifact();
  for (size_t len = 0; len <= KILN_ARTIFACT_PREAMBLE_SIZE; ++len) {
    SCOPED_TRACE(len);
    EXPECT_FAILS_WITH(openBytes({bytes.begin(), bytes.begin() + long(len)}), "truncated");
  }
  for (size_t k = 1; k < 64; ++k) {
    const size_t len = bytes.size() * k / 64;
    SCOPED_TRACE(len);
    EXPECT_FAILS_WITH(openBytes({bytes.begin(), bytes.begin() + long(len)}), "truncated");
  }
}

TEST(RuntimeArtifact, EveryPreambleByteFlipped) {
  const std::vector<uint8_t> bytes = fakeArtifact();
  for (size_t i = 0; i < KILN_ARTIFACT_PREAMBLE_SIZE; ++i) {
    SCOPED_TRACE(i);
    std::vector<uint8_t> b = bytes;
    b[i] ^= 0x10;
    OpenResult r = openBytes(b);
    EXPECT_NE(r.status, KILN_STATUS_OK);
    EXPECT_FALSE(r.message.empty());
  }
}

TEST(RuntimeArtifact, FlippedByteInEachSection) {
  const std::vector<uint8_t> bytes = fakeArtifact();
  const kiln_artifact_preamble_t p = preambleOf(bytes);
  std::vector<uint8_t> b = bytes;
  b[p.header_offset + p.header_size / 2] ^= 1;
  EXPECT_FAILS_WITH(openBytes(b), "header checksum mismatch");

  const ArtifactContents c = fakeContents();
  const size_t weightsAt = (p.header_offset + p.header_size + 4095) / 4096 * 4096;
  b = bytes;
  b[weightsAt + c.weights.size() / 2] ^= 0x80;
  EXPECT_FAILS_WITH(openBytes(b), "section 0 (weights): checksum mismatch");

  const size_t codeAt = (weightsAt + c.weights.size() + 63) / 64 * 64;
  ASSERT_EQ(codeAt + c.code.size(), bytes.size());
  b = bytes;
  b[codeAt + c.code.size() / 2] ^= 0x01;
  EXPECT_FAILS_WITH(openBytes(b), "section 1 (code): checksum mismatch");
}

TEST(RuntimeArtifact, WrongMagicAndVersion) {
  std::vector<uint8_t> b = fakeArtifact();
  b[0] = 'X';
  EXPECT_FAILS_WITH(openBytes(b), "bad magic");
  b = fakeArtifact();
  kiln_artifact_preamble_t p = preambleOf(b);
  p.format_version = KILN_ARTIFACT_FORMAT_VERSION + 1;
  std::memcpy(b.data(), &p, sizeof p);
  OpenResult r = openBytes(b);
  EXPECT_EQ(r.status, KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(r.message.find("unsupported artifact format version 2"), std::string::npos)
      << r.message;
}

TEST(RuntimeArtifact, HeaderChecksumMismatch) {
  std::vector<uint8_t> b = fakeArtifact();
  kiln_artifact_preamble_t p = preambleOf(b);
  p.header_xxh64 ^= 1;
  std::memcpy(b.data(), &p, sizeof p);
  EXPECT_FAILS_WITH(openBytes(b), "header checksum mismatch");
}

TEST(RuntimeArtifact, WrongFileIdentifier) {
  std::vector<uint8_t> b = fakeArtifact();
  const kiln_artifact_preamble_t p = preambleOf(b);
  b[p.header_offset + 4] = 'X'; // "KLN1" -> "XLN1"
  rehashHeader(b);
  EXPECT_FAILS_WITH(openBytes(b), "identifier \"KLN1\"");
}

TEST(RuntimeArtifact, WrongAbiVersion) {
  ArtifactContents c = fakeContents();
  c.target.abiVersion = KILN_ABI_VERSION + 1;
  OpenResult r = openBytes(serializeArtifact(c));
  EXPECT_EQ(r.status, KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(r.message.find("ABI version " + std::to_string(KILN_ABI_VERSION + 1)),
            std::string::npos)
      << r.message;
}

TEST(RuntimeArtifact, WrongIsa) {
  ArtifactContents c = fakeContents();
  c.target.triple = kOtherIsaTriple;
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)),
                    std::string("the code is for '") + kOtherIsaTriple + "'");
}

TEST(RuntimeArtifact, MissingCpuFeature) {
  ArtifactContents c = fakeContents();
#if defined(__aarch64__)
  // A feature the runtime knows and this CPU (or qemu's model of one) lacks.
  const char *lacking = nullptr;
  const struct { const char *name; unsigned long hwcap, bit; } kKnown[] = {
      {"sve2", AT_HWCAP2, 1}, {"i8mm", AT_HWCAP2, 13}, {"bf16", AT_HWCAP2, 14},
      {"sve", AT_HWCAP, 22}, {"dotprod", AT_HWCAP, 20}};
  for (const auto &f : kKnown)
    if (!lacking && !((getauxval(f.hwcap) >> f.bit) & 1))
      lacking = f.name;
  if (!lacking)
    GTEST_SKIP() << "this CPU has every optional feature the runtime checks";
  c.target.features = {"neon", lacking};
#else
  // Intel CPUs lack AMD's SSE4a and AMD's lack Intel's AMX: one of them is missing here.
  unsigned a, b, ecx, edx;
  const bool hasAmx = __get_cpuid_count(7, 0, &a, &b, &ecx, &edx) && ((edx >> 24) & 1);
  const bool hasSse4a = __get_cpuid(0x80000001u, &a, &b, &ecx, &edx) && ((ecx >> 6) & 1);
  const char *lacking = !hasAmx ? "amx-tile" : !hasSse4a ? "sse4a" : nullptr;
  if (!lacking)
    GTEST_SKIP() << "this CPU has both AMX and SSE4a";
  c.target.features = {"avx2", lacking};
#endif
  OpenResult r = openBytes(serializeArtifact(c));
  EXPECT_EQ(r.status, KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(r.message.find(std::string("'") + lacking + "', which this CPU lacks"),
            std::string::npos)
      << r.message;
}

TEST(RuntimeArtifact, UnknownCpuFeature) {
  ArtifactContents c = fakeContents();
  c.target.features = {c.target.features[0], "quantum-tunnelling"};
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)),
                    "'quantum-tunnelling', which this runtime does not know");
}

TEST(RuntimeArtifact, TensorOutsideWeights) {
  ArtifactContents c = fakeContents();
  c.tensors[0].offset = c.weights.size() - 16;
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)),
                    "tensor 'token_embd.weight': bytes");
  c = fakeContents();
  c.tensors[0].offset = ~0ull - 8; // offset + size wraps around
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "outside the");
}

TEST(RuntimeArtifact, SectionOutsideFile) {
  const std::vector<uint8_t> bytes = fakeArtifact();
  const ArtifactContents c = fakeContents();
  const uint64_t codeSize = c.code.size();
  std::vector<uint8_t> b = bytes;
  patchHeaderU64(b, codeSize, codeSize + 64);
  EXPECT_FAILS_WITH(openBytes(b), "section 1 (code): range");
  b = bytes;
  patchHeaderU64(b, codeSize, ~0ull);
  EXPECT_FAILS_WITH(openBytes(b), "is outside the file");
  b = bytes;
  const uint64_t codeAt = bytes.size() - codeSize;
  patchHeaderU64(b, codeAt, codeAt + 1); // misaligned (and checksummed bytes shift)
  EXPECT_FAILS_WITH(openBytes(b), "section 1 (code)");
}

TEST(RuntimeArtifact, MemoryPlanZero) {
  ArtifactContents c = fakeContents();
  c.memory.maxCtx = 0;
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "max_ctx 0");
  c = fakeContents();
  c.memory.maxBatch = 0;
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "max_batch 0");
  c = fakeContents();
  c.memory.kvBytes = ~0ull;
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "absurd");
}

TEST(RuntimeArtifact, ConfigMismatch) {
  ArtifactContents c = fakeContents();
  c.config.vocabSize += 1;
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "the tokenizer has");
  c = fakeContents();
  c.config.numKvHeads = 3;
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "inconsistent");
  c = fakeContents();
  c.tokenizer.tokens[5] = c.tokenizer.tokens[6]; // duplicate text
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "tokenizer table is invalid");
  c = fakeContents();
  c.tokenizer.scores.pop_back();
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "scores");
}

TEST(RuntimeArtifact, CodeNotElf) {
  ArtifactContents c = fakeContents();
  const char junk[] = "this is not an ELF shared object";
  c.code.assign(junk, junk + sizeof junk);
  OpenResult r = openBytes(serializeArtifact(c));
  EXPECT_EQ(r.status, KILN_STATUS_UNSUPPORTED);
  EXPECT_NE(r.message.find("not a loadable shared object"), std::string::npos) << r.message;
}

TEST(RuntimeArtifact, MissingEntrySymbol) {
  ArtifactContents c = fakeContents();
  c.target.entry = "kiln_no_such_entry";
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)),
                    "does not export the entry point 'kiln_no_such_entry'");
}

TEST(RuntimeArtifact, NoCodeSection) {
  ArtifactContents c = fakeContents();
  c.code.clear();
  EXPECT_FAILS_WITH(openBytes(serializeArtifact(c)), "no code section");
}

// Every 5th header byte changed, with the checksum fixed so the FlatBuffer reader itself
// meets the damage: any status is fine, a crash or sanitizer report is not.
TEST(RuntimeArtifact, HeaderBytesScrambledPastChecksum) {
  const std::vector<uint8_t> bytes = fakeArtifact();
  const kiln_artifact_preamble_t p = preambleOf(bytes);
  size_t failures = 0, cases = 0;
  for (size_t i = 0; i < p.header_size; i += 5) {
    for (uint8_t x : {uint8_t(0xFF), uint8_t(0x80)}) {
      std::vector<uint8_t> b = bytes;
      b[p.header_offset + i] ^= x;
      rehashHeader(b);
      OpenResult r = openBytes(b);
      ++cases;
      if (r.status != KILN_STATUS_OK) {
        ++failures;
        EXPECT_FALSE(r.message.empty()) << "byte " << i;
      }
    }
  }
  EXPECT_GT(failures, cases / 4); // most of the header is offsets, counts and ids
}

} // namespace
