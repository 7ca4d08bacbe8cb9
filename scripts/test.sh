#!/usr/bin/env bash
# README command (b): install, build, and run every test (unit, lit, sanitizer corpus,
# end-to-end on ../shared/models or $KILN_MODELS_DIR) through ctest, then a short smoke run
# of every libFuzzer harness (scripts/fuzz.sh; KILN_FUZZ_SECONDS each, 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
BUILD_DIR=${KILN_BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
secs=${KILN_FUZZ_SECONDS:-15}
if [ "$secs" -gt 0 ]; then
  KILN_FUZZ_SEED=1 ./scripts/fuzz.sh all "$secs"
fi
