#!/usr/bin/env bash
# README command (a): install, build, then import stories260K into kiln IR and generate
# text from a prompt with the fp32 reference executor.
#   KILN_MODELS_DIR  directory holding stories260K.gguf (default: ../shared/models)
#   KILN_PROMPT      prompt (default: "Once upon a time"), KILN_TOKENS (default: 64)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
BUILD_DIR=${KILN_BUILD_DIR:-build}
MODELS=${KILN_MODELS_DIR:-../shared/models}
MODEL="$MODELS/stories260K.gguf"
if [ ! -f "$MODEL" ]; then
  echo "demo: $MODEL not found." >&2
  echo "demo: put stories260K.gguf (llama.cpp's conversion of llama2.c's stories260K) in" >&2
  echo "demo: ../shared/models, or set KILN_MODELS_DIR to the directory that holds it." >&2
  exit 1
fi
echo "== kiln import $MODEL (first lines of the kiln IR)"
"$BUILD_DIR/bin/kiln" import "$MODEL" | head -n 14
echo "   ..."
echo "== kiln eval $MODEL --prompt \"${KILN_PROMPT:-Once upon a time}\" -n ${KILN_TOKENS:-64}"
"$BUILD_DIR/bin/kiln" eval "$MODEL" --prompt "${KILN_PROMPT:-Once upon a time}" \
  -n "${KILN_TOKENS:-64}"
