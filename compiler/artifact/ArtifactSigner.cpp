//===- ArtifactSigner.cpp - Ed25519 keys and signed .kiln artifacts --------===//
#include "compiler/artifact/ArtifactSigner.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/artifact.h"
#include "kiln/kiln.h"
#include "runtime-min/src/sign/ed25519.h"
#include "runtime-min/src/sign/signature_message.h"

namespace kiln::artifact {
namespace {

constexpr char kSecretTag[] = "kiln-ed25519-secret-key";
constexpr char kPublicTag[] = "kiln-ed25519-public-key";

bool readSmallFile(const std::string &path, std::string &text, std::string &error) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return error = "cannot read '" + path + "': " + std::strerror(errno), false;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  if (n == sizeof buf)
    return error = "'" + path + "' is too large to be a kiln key file", false;
  text.assign(buf, n);
  return true;
}

// A key file: its tag, a newline, 64 hex digits, a newline.
bool parseKey(const std::string &text, const char *tag, uint8_t out[32]) {
  std::string want = std::string(tag) + "\n";
  if (text.size() != want.size() + 65 || text.compare(0, want.size(), want) != 0 ||
      text.back() != '\n')
    return false;
  for (size_t i = 0; i < 32; ++i) {
    unsigned v;
    if (std::sscanf(text.c_str() + want.size() + 2 * i, "%2x", &v) != 1 ||
        !std::isxdigit(static_cast<unsigned char>(text[want.size() + 2 * i])) ||
        !std::isxdigit(static_cast<unsigned char>(text[want.size() + 2 * i + 1])))
      return false;
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

bool writeNew(const std::string &path, const std::string &text, mode_t mode,
              std::string &error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0)
    return error = "cannot create '" + path + "': " + std::strerror(errno) +
                   (errno == EEXIST ? " (keys are never overwritten)" : ""),
           false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok &= ::close(fd) == 0;
  if (!ok)
    error = "cannot write '" + path + "'";
  return ok;
}

} // namespace

std::string keyHex(const uint8_t *key, size_t n) {
  static const char hex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += {hex[key[i] >> 4], hex[key[i] & 15]};
  return s;
}

bool generateKeyPair(const std::string &prefix, std::string &publicText, std::string &error) {
  uint8_t seed[32], pub[32];
  if (getrandom(seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed))
    return error = std::string("the OS random source failed: ") + std::strerror(errno), false;
  kiln_ed25519_public_key(seed, pub);
  std::string secretText = std::string(kSecretTag) + "\n" + keyHex(seed) + "\n";
  std::memset(seed, 0, sizeof seed);
  publicText = std::string(kPublicTag) + "\n" + keyHex(pub) + "\n";
  if (!writeNew(prefix + ".key", secretText, 0600, error))
    return false;
  return writeNew(prefix + ".pub", publicText, 0644, error);
}

bool readPublicKey(const std::string &path, PublicKey &key, std::string &error) {
  std::string text;
  if (!readSmallFile(path, text, error))
    return false;
  // runtime-min's reader, so the compiler and an app read .pub files alike.
  kiln_error_t err;
  if (kiln_public_key_parse(text.data(), text.size(), key.data(), &err) != KILN_STATUS_OK)
    return error = "'" + path + "': " + err.message, false;
  return true;
}

bool checkSecretKey(const std::string &path, std::string &error) {
  std::string text;
  uint8_t seed[32];
  if (!readSmallFile(path, text, error))
    return false;
  bool ok = parseKey(text, kSecretTag, seed);
  std::memset(seed, 0, sizeof seed);
  if (!ok)
    error = "'" + path + "' is not a kiln secret key (kiln keygen writes them)";
  return ok;
}

bool signArtifact(const std::string &path, const std::string &secretKeyFile, PublicKey &signer,
                  std::string &error) {
  std::string text;
  uint8_t seed[32];
  if (!checkSecretKey(secretKeyFile, error) || !readSmallFile(secretKeyFile, text, error) ||
      !parseKey(text, kSecretTag, seed))
    return false;
  int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0)
    return error = "cannot open '" + path + "': " + std::strerror(errno), false;
  auto failFd = [&](const std::string &why) {
    ::close(fd);
    std::memset(seed, 0, sizeof seed);
    error = "cannot sign '" + path + "': " + why;
    return false;
  };
  struct stat st;
  kiln_artifact_preamble_t pre;
  if (::fstat(fd, &st) != 0 || ::pread(fd, &pre, sizeof pre, 0) != sizeof pre ||
      std::memcmp(pre.magic, KILN_ARTIFACT_MAGIC, 8) != 0 ||
      pre.file_size != static_cast<uint64_t>(st.st_size))
    return failFd("not a complete kiln artifact");
  // Signed already: the new signature replaces the old trailer.
  uint64_t body = pre.signature_offset ? pre.signature_offset : pre.file_size;
  if (pre.signature_offset && pre.signature_offset + KILN_SIGNATURE_TRAILER_SIZE != pre.file_size)
    return failFd("its signature trailer is malformed");
  pre.signature_offset = body;
  pre.file_size = body + KILN_SIGNATURE_TRAILER_SIZE;
  if (::pwrite(fd, &pre, sizeof pre, 0) != sizeof pre || ::ftruncate(fd, pre.file_size) != 0)
    return failFd(std::strerror(errno));
  void *map = ::mmap(nullptr, body, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED)
    return failFd(std::string("mmap: ") + std::strerror(errno));
  kiln_signature_trailer_t t{};
  std::memcpy(t.magic, KILN_SIGNATURE_MAGIC, 8);
  t.algorithm = KILN_SIGNATURE_ED25519;
  t.trailer_size = KILN_SIGNATURE_TRAILER_SIZE;
  kiln_ed25519_public_key(seed, t.public_key);
  std::vector<uint8_t> message(kiln_signature_message_size(body));
  kiln_error_t err;
  kiln_status_t hashed = kiln_signature_message(static_cast<const uint8_t *>(map), body, 0,
                                                nullptr, message.data(), &err);
  ::munmap(map, body);
  if (hashed != KILN_STATUS_OK)
    return failFd(err.message);
  kiln_ed25519_sign(t.signature, message.data(), message.size(), seed);
  std::memset(seed, 0, sizeof seed);
  if (::pwrite(fd, &t, sizeof t, body) != sizeof t)
    return failFd(std::strerror(errno));
  if (::close(fd) != 0)
    return error = "cannot sign '" + path + "': close failed", false;
  std::memcpy(signer.data(), t.public_key, signer.size());
  return true;
}

} // namespace kiln::artifact
