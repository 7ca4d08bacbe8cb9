//===- SignCommands.cpp - kiln keygen and kiln sign -----------------------===//
#include <cstdio>
#include <string>

#include "compiler/artifact/ArtifactSigner.h"
#include "compiler/tools/kiln/Commands.h"

namespace kiln::tool {

int runKeygen(const std::string &prefix) {
  std::string publicText, error;
  if (!artifact::generateKeyPair(prefix, publicText, error)) {
    std::fprintf(stderr, "kiln keygen: error: %s\n", error.c_str());
    return 1;
  }
  std::printf("wrote %s.key (secret: keep it out of the app and the repository) and %s.pub\n"
              "%s",
              prefix.c_str(), prefix.c_str(), publicText.c_str());
  return 0;
}

int runSign(const std::string &artifactPath, const std::string &secretKey) {
  artifact::PublicKey signer;
  std::string error;
  if (!artifact::signArtifact(artifactPath, secretKey, signer, error)) {
    std::fprintf(stderr, "kiln sign: error: %s\n", error.c_str());
    return 1;
  }
  std::printf("signed %s with key %s\n", artifactPath.c_str(),
              artifact::keyHex(signer.data()).c_str());
  return 0;
}

} // namespace kiln::tool
