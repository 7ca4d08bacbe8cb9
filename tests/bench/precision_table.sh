#!/usr/bin/env bash
# The stories260K precision table of docs/precision.md, regenerated: for each precision
# policy, the weights' stored bytes and bits per weight, the reference executor's dev-text
# PPL, mean KLD against f32 and top-1 agreement, and the compiled artifact's dev-text PPL.
# Auto calibrates on tinystories-calib.txt and is judged on tinystories-dev.txt.
# Not a test: it prints numbers (minutes on 2 cores, most of it auto's search, run once per
# auto row by `kiln compile`; the reference replays the artifact's map with --precision map:).
# With a CSV (KILN_BENCH_OUT) it also draws OUT's .svg (precision_frontier.py).
#
#   tests/bench/precision_table.sh [OUT.md]
#   KILN_MODELS_DIR=../shared/models  KILN_BUILD_DIR=build  KILN_PREC_DIR=/tmp/kiln-precision
#   KILN_PREC_CALIB_CHUNKS=8 (auto's calibration chunks)  KILN_PREC_CHUNKS=0 (dev chunks, 0 = all)
#   KILN_PREC_ROWS="f32 q4_0 ..." (a subset of the row names below; NAME@weighted or
#   NAME@gptq rounds that row's formats with --rounding on the calibration text; a final
#   +rot adds --rotate residual, e.g. q4_0@gptq+rot)
#   KILN_BENCH_OUT=build/bench-results (the rows as CSV, precision_table-<UTC time>.csv; empty:
#   none; build/ is ignored by git; a relative path is from the caller's directory)
set -euo pipefail
DATA_DIR=${KILN_BENCH_OUT-$(cd "$(dirname "$0")/../.." && pwd)/build/bench-results}
case "$DATA_DIR" in '' | /*) ;; *) DATA_DIR="$PWD/$DATA_DIR" ;; esac
cd "$(dirname "$0")/../.."
BUILD=${KILN_BUILD_DIR:-build}
KILN="$BUILD/bin/kiln"
RUN="$BUILD/bin/kiln-run"
MODELS=${KILN_MODELS_DIR:-../shared/models}
WORK=${KILN_PREC_DIR:-/tmp/kiln-precision}
OUT=${1:-$WORK/precision.md}
CALIB_CHUNKS=${KILN_PREC_CALIB_CHUNKS:-8}
CHUNKS=${KILN_PREC_CHUNKS:-0}
ROWS=${KILN_PREC_ROWS:-"f32 q4_0 q4_0@weighted q4_0@gptq q8_0 q3_0 q3_0@gptq rules llama-mix auto-4.5 auto-4.5@gptq auto-4@gptq auto-5 auto-5@gptq auto-6 auto-rules-size auto-387104"}
for f in stories260K.gguf tinystories-calib.txt tinystories-dev.txt; do
  if [ ! -f "$MODELS/$f" ]; then
    echo "precision_table.sh: $MODELS/$f not found (set KILN_MODELS_DIR)" >&2
    exit 1
  fi
done
for b in "$KILN" "$RUN"; do
  [ -x "$b" ] || { echo "precision_table.sh: $b not built (./scripts/build.sh)" >&2; exit 1; }
done
MODEL="$MODELS/stories260K.gguf"
DEV="$MODELS/tinystories-dev.txt"
CALIB=(--calib "$MODELS/tinystories-calib.txt" --calib-chunks "$CALIB_CHUNKS")
RULES="rules:attn_qkv=q4_0,ffn=q8_0,norms=f16,default=q8_0"
mkdir -p "$WORK"

# Sets LABEL and SPEC (the --precision value and auto's flags) for a row name, and ROUND
# (the --rounding flags of NAME@METHOD, replayed by the reference).
row_spec() {
  ROUND=()
  if [[ $1 == *+rot ]]; then
    row_spec "${1%+rot}"
    LABEL="$LABEL, \`--rotate residual\`"
    ROUND+=(--rotate residual)
    return
  fi
  if [[ $1 == *@* ]]; then
    row_spec "${1%@*}"
    LABEL="$LABEL, \`--rounding ${1#*@}\`"
    ROUND=(--rounding "${1#*@}")
    return
  fi
  case "$1" in
    f32|q4_0|q8_0|q3_0) LABEL="uniform $1"; SPEC=(--precision "uniform:$1") ;;
    rules) LABEL="rules \`${RULES#rules:}\`"; SPEC=(--precision "$RULES") ;;
    llama-mix) LABEL="llama.cpp's Q4_0 mix (\`ffn_down=f32,output=q8_0,default=q4_0\`)"
      SPEC=(--precision "rules:ffn_down=f32,output=q8_0,default=q4_0") ;;
    auto-rules-size)
      # Auto at the rules row's stored size (that row must run first).
      [ -n "${RULES_BYTES:-}" ] || { echo "auto-rules-size needs the rules row" >&2; exit 1; }
      LABEL="auto \`--max-weight-bytes $RULES_BYTES\` (the rules' size)"
      SPEC=(--precision auto "${CALIB[@]}" --max-weight-bytes "$RULES_BYTES") ;;
    auto-387104) LABEL="auto \`--max-weight-bytes 387104\` (llama.cpp's Q4_0 mix file)"
      SPEC=(--precision auto "${CALIB[@]}" --max-weight-bytes 387104) ;;
    auto-*) LABEL="auto \`--bpw ${1#auto-}\`"
      SPEC=(--precision auto "${CALIB[@]}" --bpw "${1#auto-}") ;;
    *) echo "precision_table.sh: unknown row $1" >&2; exit 1 ;;
  esac
}

field() { # field REGEX TEXT: the first capture group of the first line matching REGEX
  echo "$2" | sed -n -E "s/$1/\1/p" | head -1
}

{
  echo "| precision | weight bytes | bpw | ref PPL | KLD vs f32 | top-1 agree | artifact PPL | auto: mix, predicted / measured calib KLD |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
} > "$OUT"
DATA=
if [ -n "$DATA_DIR" ]; then
  mkdir -p "$DATA_DIR"
  DATA="$DATA_DIR/precision_table-$(date -u +%Y%m%dT%H%M%SZ).csv"
  echo "row,weight_bytes,bpw,ref_ppl,kld_vs_f32,top1_agree,artifact_ppl,auto_mix,auto_predicted_kld,auto_measured_kld" > "$DATA"
fi
for row in $ROWS; do
  row_spec "$row"
  art="$WORK/$row.kiln"
  # the rounding's calibration text, unless auto's flags name it already
  RCALIB=()
  [[ " ${ROUND[*]} " != *" --rounding "* ]] || RCALIB=("${CALIB[@]}")
  COMPILE_RCALIB=("${RCALIB[@]}")
  [[ " ${SPEC[*]} " != *" --calib "* ]] || COMPILE_RCALIB=()
  if ! "$KILN" compile "$MODEL" --ctx 256 "${SPEC[@]}" "${ROUND[@]}" "${COMPILE_RCALIB[@]}" -o "$art" \
      > "$WORK/$row.log" 2>&1; then
    cat "$WORK/$row.log" >&2; exit 1
  fi
  info=$("$KILN" inspect "$art")
  # The reference runs the artifact's own map: auto's search runs once, in the compile.
  map=$(field '^  kiln-apply-precision-map \[map=([^]]+)\].*' "$info")
  [ -z "$map" ] || SPEC=(--precision "map:$map")
  ref=$("$KILN" ppl "$MODEL" "$DEV" --ctx 256 --chunks "$CHUNKS" --compare "$MODEL" \
        "${SPEC[@]}" "${ROUND[@]}" "${RCALIB[@]}" 2>/dev/null)
  runppl=$("$RUN" ppl "$art" "$DEV" --ctx 256 --chunks "$CHUNKS" 2>/dev/null)
  # Weight bytes: the tensors as stored, less the RoPE tables (what the budget counts); bits
  # per weight over the weights of those tensors (logical shapes, padding not counted).
  read -r bytes nweights < <(echo "$info" | awk '
    /^tensors:/ {t = 1; next}
    t && /^  total / {t = 0}
    t && $1 != "name" && $1 !~ /^rope\./ {
      for (k = 3; k <= NF && $k !~ /\]$/; k++) ;
      s = ""; for (i = 3; i <= k; i++) s = s $i
      gsub(/[\[\]]/, "", s); n = split(s, d, ","); p = 1
      for (j = 1; j <= n; j++) p *= d[j]
      w += p; b += $(k + 4) }
    END {print b, w}')
  [ "$row" = rules ] && RULES_BYTES=$bytes
  bpw=$(awk -v b="$bytes" -v n="$nweights" 'BEGIN {printf "%.2f", 8 * b / n}')
  autocol=$(echo "$info" | sed -n -E \
    's/.*precision-auto .*mix=([^,]+),predicted_kld=([^,]+),measured_kld=([^, ]+).*/\1, \2 \/ \3/p' |
    head -1)
  ref_ppl=$(field '^PPL = ([0-9.]+).*' "$ref") || true
  kld=$(field '^mean KLD \(compare \|\| model\) = ([0-9.]+).*' "$ref") || true
  top1=$(field '^top-1 agreement = ([0-9.]+).*' "$ref") || true
  art_ppl=$(field '^PPL = ([0-9.]+).*' "$runppl") || true
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$LABEL" "$bytes" "$bpw" \
    "$ref_ppl" "$kld" "$top1" "$art_ppl" "${autocol:--}" >> "$OUT"
  tail -1 "$OUT"
  if [ -n "$DATA" ]; then
    autocsv=$(echo "$info" | sed -n -E \
      's/.*precision-auto .*mix=([^,]+),predicted_kld=([^,]+),measured_kld=([^, ]+).*/\1,\2,\3/p' |
      head -1)
    echo "$row,$bytes,$bpw,$ref_ppl,$kld,$top1,$art_ppl,${autocsv:-,,}" >> "$DATA"
  fi
done
echo "wrote $OUT"
if [ -n "$DATA" ]; then
  echo "wrote $DATA" >&2
  # the frontier drawn: bits per weight against PPL, one colour per rounding
  python3 "$(dirname "$0")/precision_frontier.py" "$DATA" "${OUT%.md}.svg" >&2
fi
