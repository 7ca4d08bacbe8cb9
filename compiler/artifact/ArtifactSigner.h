//===- ArtifactSigner.h - Ed25519 keys and signed .kiln artifacts ----------===//
//
// kiln keygen writes a key pair; kiln compile --sign and kiln sign append the signature
// trailer of kiln/artifact.h to an artifact (docs/artifact-format.md, "Signatures").
// runtime-min checks it when the app opens the artifact with its public key.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_ARTIFACT_ARTIFACTSIGNER_H
#define KILN_ARTIFACT_ARTIFACTSIGNER_H

#include <array>
#include <cstdint>
#include <string>

namespace kiln::artifact {

using PublicKey = std::array<uint8_t, 32>;

// Writes PREFIX.key (the secret seed, mode 0600) and PREFIX.pub from 32 bytes of the OS's
// random source; refuses to overwrite either. Returns the public key's text on success.
bool generateKeyPair(const std::string &prefix, std::string &publicText, std::string &error);

// Reads a `kiln keygen` public key file.
bool readPublicKey(const std::string &path, PublicKey &key, std::string &error);

// Whether a secret key file reads (before a long compile that would sign with it).
bool checkSecretKey(const std::string &path, std::string &error);

// Signs the artifact at path in place with the secret key file: sets the preamble's
// signature_offset and file_size, signs every byte before the trailer and appends it. A
// signed artifact is signed again (the old trailer replaced). Fills the signer's key.
bool signArtifact(const std::string &path, const std::string &secretKeyFile, PublicKey &signer,
                  std::string &error);

// The key in hex, as the key files and messages show it.
std::string keyHex(const uint8_t *key, size_t n = 32);

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_ARTIFACTSIGNER_H
