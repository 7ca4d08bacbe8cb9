#!/usr/bin/env bash
# Installs every Debian package kiln's build and tests need; skips what is present.
# Idempotent: safe to run on every README command and in CI.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache pkg-config g++ python3
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools clang-19 lld-19
  libclang-rt-19-dev
  libflatbuffers-dev flatbuffers-compiler
  libeigen3-dev libcli11-dev libgtest-dev libgmock-dev
  # The provenance's source SHA-256 in kiln compile (OpenSSL's libcrypto).
  libssl-dev
  # Non-host targets, proven by emulation (issue 7): aarch64 cross C library and
  # compiler for runtime-min, qemu user-mode for aarch64 and Hexagon.
  qemu-user-static gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
  # ONNX frontend (issue 6): the protobuf reader, and torch.onnx to export the test models
  # (tests/onnx runs them with /usr/bin/python3, KILN_TORCH_PYTHON).
  libonnx-dev libprotobuf-dev protobuf-compiler python3-torch python3-onnx python3-numpy
  # Byte-level BPE oracle (issue 6): tests/onnx/byte_bpe_reference.py splits text with the
  # Llama 3 regex, which needs \p{L} / \p{N} (the standard re module has neither).
  python3-regex
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
