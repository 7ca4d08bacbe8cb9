// The artifact provenance's source hash: known digests, including a file past 512 MiB,
// where llvm::SHA256 (LLVM 19, a 32-bit byte count) stops being SHA-256.
#include <atomic>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "compiler/tools/kiln/FileSha256.h"

namespace {

using kiln::tool::fileSha256Hex;

// A file of `bytes` bytes: `text`, or zeros past it (a sparse file: no disk used).
std::string makeFile(const std::string &name, const std::string &text, off_t bytes) {
  std::string path = ::testing::TempDir() + "kiln-sha256-" + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr) << path;
  if (!f)
    return path;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  EXPECT_EQ(truncate(path.c_str(), bytes), 0);
  return path;
}

TEST(FileSha256, KnownDigests) {
  // FIPS 180-2's "abc" and the empty message
  const std::string abc = makeFile("abc", "abc", 3);
  EXPECT_EQ(fileSha256Hex(abc), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string empty = makeFile("empty", "", 0);
  EXPECT_EQ(fileSha256Hex(empty), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::remove(abc.c_str());
  std::remove(empty.c_str());
}

// 513 MiB of zeros; the digest is Python's hashlib.sha256(b"\0" * (513 << 20)). LLVM 19's
// SHA256 gives another from 512 MiB on, which every real model's file passes.
TEST(FileSha256, PastFiveHundredTwelveMiB) {
  const std::string big = makeFile("513m", "", off_t(513) << 20);
  EXPECT_EQ(fileSha256Hex(big), "a3e2acbb469e4e59dde406f912e754c933c1ac0fb0092a3634d61d5073309c0c");
  std::remove(big.c_str());
}

TEST(FileSha256, MissingFileOrCancelledIsEmpty) {
  EXPECT_EQ(fileSha256Hex(::testing::TempDir() + "kiln-sha256-does-not-exist"), "");
  const std::string abc = makeFile("cancel", "abc", 3);
  std::atomic<bool> cancel{true};
  EXPECT_EQ(fileSha256Hex(abc, &cancel), "");
  std::remove(abc.c_str());
}

} // namespace
