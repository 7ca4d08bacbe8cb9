#!/usr/bin/env bash
# Installs dependencies (idempotent) and builds kiln into build/ (or $KILN_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
BUILD_DIR=${KILN_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    ${KILN_MODELS_DIR:+-DKILN_MODELS_DIR="$KILN_MODELS_DIR"}
fi
cmake --build "$BUILD_DIR"
