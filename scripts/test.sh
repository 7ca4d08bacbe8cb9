#!/usr/bin/env bash
# README command (b): install, build, and run every test (unit, lit, sanitizer corpus,
# end-to-end on ../shared/models or $KILN_MODELS_DIR) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
BUILD_DIR=${KILN_BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
