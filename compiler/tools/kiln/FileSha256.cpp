#include "compiler/tools/kiln/FileSha256.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include <openssl/evp.h>

namespace kiln::tool {

std::string fileSha256Hex(const std::string &path, const std::atomic<bool> *cancel) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "";
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> sha(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!sha || EVP_DigestInit_ex(sha.get(), EVP_sha256(), nullptr) != 1)
    return "";
  std::vector<char> chunk(1 << 20);
  while (in) {
    if (cancel && *cancel)
      return "";
    in.read(chunk.data(), std::streamsize(chunk.size()));
    if (EVP_DigestUpdate(sha.get(), chunk.data(), size_t(in.gcount())) != 1)
      return "";
  }
  if (!in.eof())
    return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digestBytes = 0;
  if (EVP_DigestFinal_ex(sha.get(), digest, &digestBytes) != 1 || digestBytes != 32)
    return "";
  std::string hex;
  char b[3];
  for (unsigned int i = 0; i < digestBytes; ++i) {
    std::snprintf(b, sizeof b, "%02x", digest[i]);
    hex += b;
  }
  return hex;
}

} // namespace kiln::tool
