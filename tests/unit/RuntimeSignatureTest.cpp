// Signed artifacts: Ed25519 against RFC 8032's vectors, then kiln sign + kiln_artifact_open
// with the app's public key. Every byte of a signed file is flipped in turn: with the key,
// each must be refused (and at the signature step, before the header is parsed and before
// any code is loaded); so must a wrong key and an unsigned file. Also runs under ASan/UBSan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "compiler/artifact/ArtifactSigner.h"
#include "runtime-min/src/sign/ed25519.h"
#include "runtime-min/src/sign/signature_message.h"
#include "tests/unit/RuntimeFakeArtifact.h"

using namespace kiln::test;

namespace {

std::vector<uint8_t> hex(const std::string &s) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i + 1 < s.size(); i += 2)
    v.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return v;
}

// RFC 8032 section 7.1, TEST 1 (empty message) and TEST 2 (one byte).
TEST(Ed25519, Rfc8032Vectors) {
  struct Case {
    const char *seed, *pub, *msg, *sig;
  } cases[] = {
      {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
       "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
       "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3"
       "9701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
      {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
       "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
       "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3"
       "613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
  };
  for (const Case &c : cases) {
    std::vector<uint8_t> seed = hex(c.seed), pub = hex(c.pub), msg = hex(c.msg), sig = hex(c.sig);
    uint8_t gotPub[32], gotSig[64];
    kiln_ed25519_public_key(seed.data(), gotPub);
    EXPECT_EQ(std::vector<uint8_t>(gotPub, gotPub + 32), pub);
    kiln_ed25519_sign(gotSig, msg.data(), msg.size(), seed.data());
    EXPECT_EQ(std::vector<uint8_t>(gotSig, gotSig + 64), sig);
    EXPECT_EQ(kiln_ed25519_verify(sig.data(), msg.data(), msg.size(), pub.data()), 0);
    sig[10] ^= 1;
    EXPECT_EQ(kiln_ed25519_verify(sig.data(), msg.data(), msg.size(), pub.data()), -1);
  }
}

std::vector<uint8_t> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Keys {
  std::string prefix;
  kiln::artifact::PublicKey pub{};
  explicit Keys(const std::string &name) {
    const char *dir = std::getenv("TMPDIR");
    prefix = std::string(dir && *dir ? dir : "/tmp") + "/kiln-sig-test-" + name + "-" +
             std::to_string(::getpid());
    std::remove((prefix + ".key").c_str());
    std::remove((prefix + ".pub").c_str());
    std::string text, error;
    EXPECT_TRUE(kiln::artifact::generateKeyPair(prefix, text, error)) << error;
    EXPECT_TRUE(kiln::artifact::readPublicKey(prefix + ".pub", pub, error)) << error;
    kiln_error_t err;
    uint8_t parsed[32];
    EXPECT_EQ(kiln_public_key_parse(text.data(), text.size(), parsed, &err), KILN_STATUS_OK)
        << err.message;
    EXPECT_EQ(std::vector<uint8_t>(parsed, parsed + 32),
              std::vector<uint8_t>(pub.begin(), pub.end()));
  }
  ~Keys() {
    std::remove((prefix + ".key").c_str());
    std::remove((prefix + ".pub").c_str());
  }
};

struct Opened {
  kiln_status_t status;
  std::string message;
  uint32_t signature = 0;
};

Opened openWith(const std::vector<uint8_t> &bytes, const uint8_t *key) {
  TempFile f(bytes);
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  kiln_artifact_options_t o = kiln_artifact_options_default();
  o.public_key = key;
  Opened r{kiln_artifact_open_with(f.path().c_str(), &o, &a, &err), err.message};
  if (a) {
    kiln_artifact_info_t info;
    kiln_artifact_info(a, &info);
    r.signature = info.signature;
  }
  kiln_artifact_close(a);
  return r;
}

std::vector<uint8_t> signedFake(const Keys &keys) {
  TempFile f(fakeArtifact());
  kiln::artifact::PublicKey signer;
  std::string error;
  EXPECT_TRUE(kiln::artifact::signArtifact(f.path(), keys.prefix + ".key", signer, error))
      << error;
  EXPECT_EQ(signer, keys.pub);
  return readAll(f.path());
}

TEST(RuntimeSignature, SignedArtifactOpensWithItsKey) {
  Keys keys("ok");
  const std::vector<uint8_t> unsignedBytes = fakeArtifact();
  const std::vector<uint8_t> bytes = signedFake(keys);
  ASSERT_EQ(bytes.size(), unsignedBytes.size() + KILN_SIGNATURE_TRAILER_SIZE);
  Opened r = openWith(bytes, keys.pub.data());
  EXPECT_EQ(r.status, KILN_STATUS_OK) << r.message;
  EXPECT_EQ(r.signature, uint32_t(KILN_SIGNATURE_VERIFIED));
  r = openWith(bytes, nullptr);
  EXPECT_EQ(r.status, KILN_STATUS_OK) << r.message;
  EXPECT_EQ(r.signature, uint32_t(KILN_SIGNATURE_UNCHECKED));
  r = openWith(unsignedBytes, nullptr);
  EXPECT_EQ(r.signature, uint32_t(KILN_SIGNATURE_NONE));
  // Signing again replaces the trailer: same size, still valid.
  TempFile again(bytes);
  kiln::artifact::PublicKey signer;
  std::string error;
  ASSERT_TRUE(kiln::artifact::signArtifact(again.path(), keys.prefix + ".key", signer, error));
  EXPECT_EQ(readAll(again.path()), bytes); // Ed25519 is deterministic
}

TEST(RuntimeSignature, WrongKeyOrNoSignatureIsRefused) {
  Keys keys("a"), other("b");
  const std::vector<uint8_t> bytes = signedFake(keys);
  Opened r = openWith(bytes, other.pub.data());
  EXPECT_EQ(r.status, KILN_STATUS_BAD_SIGNATURE);
  EXPECT_NE(r.message.find("not this app's key"), std::string::npos) << r.message;
  r = openWith(fakeArtifact(), keys.pub.data());
  EXPECT_EQ(r.status, KILN_STATUS_BAD_SIGNATURE);
  EXPECT_NE(r.message.find("not signed"), std::string::npos) << r.message;
  // Stripping the trailer and restoring the unsigned preamble gives the unsigned file,
  // which the key refuses as above; cutting the trailer alone breaks the preamble's size.
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - KILN_SIGNATURE_TRAILER_SIZE);
  EXPECT_NE(openWith(cut, keys.pub.data()).status, KILN_STATUS_OK);
}

TEST(RuntimeSignature, EveryFlippedByteIsRefused) {
  Keys keys("flip");
  const std::vector<uint8_t> bytes = signedFake(keys);
  size_t refused = 0, atSignature = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x20;
    Opened r = openWith(bad, keys.pub.data());
    refused += r.status != KILN_STATUS_OK;
    // The preamble's own checks (magic, sizes, header xxh64) may catch a flip first; past
    // the preamble the signature does, before the header's tables are read.
    atSignature += r.status == KILN_STATUS_BAD_SIGNATURE;
    if (r.status == KILN_STATUS_OK)
      ADD_FAILURE() << "a flip at byte " << i << " of " << bytes.size() << " opened";
  }
  EXPECT_EQ(refused, bytes.size());
  EXPECT_GT(atSignature, bytes.size() / 2);
  std::printf("flipped %zu bytes: %zu refused, %zu of them by the signature\n", bytes.size(),
              refused, atSignature);
}

// The signed message: per-chunk SHA-512, the same on any number of threads, and a changed
// byte changes its chunk's digest and no other.
TEST(RuntimeSignature, MessageIsPerChunkAndThreadIndependent) {
  const size_t chunk = KILN_SIGNATURE_CHUNK_BYTES, size = 2 * chunk + 12345;
  std::vector<uint8_t> data(size);
  for (size_t i = 0; i < size; ++i)
    data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  const size_t n = kiln_signature_message_size(size);
  ASSERT_EQ(n, 16u + 3 * 64u);
  std::vector<uint8_t> one(n), four(n), changed(n);
  kiln_error_t err;
  ASSERT_EQ(kiln_signature_message(data.data(), size, 1, nullptr, one.data(), &err), KILN_STATUS_OK);
  ASSERT_EQ(kiln_signature_message(data.data(), size, 4, nullptr, four.data(), &err),
            KILN_STATUS_OK);
  EXPECT_EQ(one, four);
  uint8_t digest[64];
  kiln_sha512(digest, data.data() + 2 * chunk, 12345);
  EXPECT_EQ(std::vector<uint8_t>(digest, digest + 64),
            std::vector<uint8_t>(one.begin() + 16 + 128, one.end()));
  data[chunk + 7] ^= 1;
  ASSERT_EQ(kiln_signature_message(data.data(), size, 2, nullptr, changed.data(), &err),
            KILN_STATUS_OK);
  EXPECT_TRUE(std::equal(one.begin(), one.begin() + 16 + 64, changed.begin()));
  EXPECT_FALSE(std::equal(one.begin() + 16 + 64, one.begin() + 16 + 128, changed.begin() + 16 + 64));
  EXPECT_TRUE(std::equal(one.begin() + 16 + 128, one.end(), changed.begin() + 16 + 128));
}

// An artifact of several chunks: flips in the second and last chunk and on a chunk
// boundary are refused too.
TEST(RuntimeSignature, FlipsPastTheFirstChunkAreRefused) {
  Keys keys("big");
  kiln::artifact::ArtifactContents c = fakeContents();
  c.weights.resize(c.weights.size() + 2 * KILN_SIGNATURE_CHUNK_BYTES, 0x5a);
  TempFile f(kiln::artifact::serializeArtifact(c));
  kiln::artifact::PublicKey signer;
  std::string error;
  ASSERT_TRUE(kiln::artifact::signArtifact(f.path(), keys.prefix + ".key", signer, error)) << error;
  const std::vector<uint8_t> bytes = readAll(f.path());
  Opened r = openWith(bytes, keys.pub.data());
  ASSERT_EQ(r.status, KILN_STATUS_OK) << r.message;
  EXPECT_EQ(r.signature, uint32_t(KILN_SIGNATURE_VERIFIED));
  const size_t chunk = KILN_SIGNATURE_CHUNK_BYTES, end = bytes.size() - KILN_SIGNATURE_TRAILER_SIZE;
  for (size_t at : {chunk - 1, chunk, chunk + 4097, 2 * chunk, end - 1}) {
    std::vector<uint8_t> bad = bytes;
    bad[at] ^= 0x01;
    EXPECT_EQ(openWith(bad, keys.pub.data()).status, KILN_STATUS_BAD_SIGNATURE) << "byte " << at;
  }
}

TEST(RuntimeSignature, BadKeyTextIsAnError) {
  kiln_error_t err;
  uint8_t key[32];
  const std::string good =
      "kiln-ed25519-public-key\n" + std::string(64, 'a') + "\n";
  EXPECT_EQ(kiln_public_key_parse(good.data(), good.size(), key, &err), KILN_STATUS_OK);
  for (std::string bad : {std::string("kiln-ed25519-secret-key\n") + std::string(64, 'a'),
                          "kiln-ed25519-public-key\n" + std::string(63, 'a'),
                          "kiln-ed25519-public-key\n" + std::string(64, 'g'),
                          "kiln-ed25519-public-key\n" + std::string(66, 'a'), std::string()})
    EXPECT_EQ(kiln_public_key_parse(bad.data(), bad.size(), key, &err), KILN_STATUS_CORRUPT)
        << bad;
}

} // namespace
