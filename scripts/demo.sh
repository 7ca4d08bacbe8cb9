#!/usr/bin/env bash
# README command (a): install, build, compile stories260K for this machine into a .kiln
# artifact, then run it with kiln-run (runtime-min): prompt -> text, then TTFT and tok/s.
#   KILN_MODELS_DIR  directory holding stories260K.gguf (default: ../shared/models)
#   KILN_PROMPT      prompt (default: "Once upon a time"), KILN_TOKENS (default: 64)
#   KILN_WEIGHTS     f32 (default), f16 or q8_0
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
ARTIFACT="$BUILD_DIR/stories260K.kiln"
echo "== kiln compile $MODEL --target host --weights ${KILN_WEIGHTS:-f32} -o $ARTIFACT"
"$BUILD_DIR/bin/kiln" compile "$MODEL" --target host --weights "${KILN_WEIGHTS:-f32}" \
  --ctx 512 -o "$ARTIFACT"
"$BUILD_DIR/bin/kiln" inspect "$ARTIFACT" | grep -E "^(target|model|memory plan)"
echo "== kiln-run generate $ARTIFACT -p \"${KILN_PROMPT:-Once upon a time}\" -n ${KILN_TOKENS:-64}"
"$BUILD_DIR/bin/kiln-run" generate "$ARTIFACT" -p "${KILN_PROMPT:-Once upon a time}" \
  -n "${KILN_TOKENS:-64}"
