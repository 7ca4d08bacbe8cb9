//===- FileSha256.h - a file's SHA-256, for the artifact's provenance -----===//
//
// OpenSSL's SHA-256 (libcrypto), which uses the CPU's SHA extensions where it has them:
// 1.2 GB/s on the Zen 3 build machine, against ~175 MB/s for llvm::SHA256. llvm::SHA256
// (LLVM 19) also counts the message in a 32-bit byte count, so its digest of anything
// from 512 MiB on is not SHA-256: every real model's provenance hash was wrong until
// kiln used this (tests/unit/FileSha256Test.cpp).
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_TOOLS_KILN_FILESHA256_H
#define KILN_COMPILER_TOOLS_KILN_FILESHA256_H

#include <atomic>
#include <string>

namespace kiln::tool {

// Lower-case hex SHA-256 of the file at `path`, read in 1 MiB chunks (not mapped: the
// frontend already maps the model, and a second mapping of a multi-gigabyte file doubled
// the compile's resident pages). "" when the file cannot be read, or when `cancel` is set
// before the end (checked between chunks).
std::string fileSha256Hex(const std::string &path, const std::atomic<bool> *cancel = nullptr);

} // namespace kiln::tool

#endif // KILN_COMPILER_TOOLS_KILN_FILESHA256_H
