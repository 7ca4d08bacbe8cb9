#!/usr/bin/env bash
# Benchmark matrix: model shapes x weight formats x weight layouts x threads, one markdown
# table.
# Not a test: it prints numbers (decode/prefill tok/s, bytes per token, achieved GB/s and
# the share of the streaming-read bandwidth measured in the same kiln-run process).
#
#   tests/bench/run_matrix.sh [OUT.md]
#   KILN_BENCH_SHAPES="stories tinyllama layer7b"  KILN_BENCH_FORMATS="f16 q8_0 q4_0 q4_1"
#   KILN_BENCH_LAYOUTS="r16 none" (kiln compile --layout; both compiled and run in turn)
#   KILN_BENCH_THREADS="1 2"  KILN_BENCH_CTX=256  KILN_BENCH_REPS=3
#   KILN_BENCH_DIR=/tmp/kiln-bench (synthetic models, GBs)
#   KILN_BENCH_OUT=build/bench-results (raw rows as CSV, run_matrix-<UTC time>.csv; empty: none)
set -euo pipefail
# Raw results go outside git: build/ is ignored. A relative KILN_BENCH_OUT is from the caller's
# directory, read before the cd below.
DATA_DIR=${KILN_BENCH_OUT-$(cd "$(dirname "$0")/../.." && pwd)/build/bench-results}
case "$DATA_DIR" in '' | /*) ;; *) DATA_DIR="$PWD/$DATA_DIR" ;; esac
cd "$(dirname "$0")/../.."
BUILD=${KILN_BUILD_DIR:-build}
KILN="$BUILD/bin/kiln"
RUN="$BUILD/bin/kiln-run"
MODELS=${KILN_MODELS_DIR:-../shared/models}
WORK=${KILN_BENCH_DIR:-/tmp/kiln-bench}
OUT=${1:-$WORK/bench.md}
SHAPES=${KILN_BENCH_SHAPES:-"stories tinyllama layer7b"}
FORMATS=${KILN_BENCH_FORMATS:-"f16 q8_0 q4_0 q4_1"}
LAYOUTS=${KILN_BENCH_LAYOUTS:-"r16 none"}
THREADS=${KILN_BENCH_THREADS:-"1 2"}
CTX=${KILN_BENCH_CTX:-256}
REPS=${KILN_BENCH_REPS:-3}
mkdir -p "$WORK"

model_for() {
  case "$1" in
    stories) echo "$MODELS/stories260K.gguf" ;;
    # TinyLlama-1.1B shape and a 7B-layer shape (4 layers), deterministic random weights.
    tinyllama)
      [ -f "$WORK/tinyllama.gguf" ] || "$KILN" synth -o "$WORK/tinyllama.gguf" --type f16 \
        --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --ctx 2048 >&2
      echo "$WORK/tinyllama.gguf" ;;
    layer7b)
      [ -f "$WORK/layer7b.gguf" ] || "$KILN" synth -o "$WORK/layer7b.gguf" --type f16 \
        --dim 4096 --layers 4 --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 --ctx 4096 >&2
      echo "$WORK/layer7b.gguf" ;;
    *) echo "unknown shape $1" >&2; exit 1 ;;
  esac
}

{
  echo "| shape | format | layout | threads | decode tok/s | prefill tok/s (64) | weight bytes/token | GB/s | read GB/s | % of bandwidth | % of peak read |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$OUT"
DATA=
if [ -n "$DATA_DIR" ]; then
  mkdir -p "$DATA_DIR"
  DATA="$DATA_DIR/run_matrix-$(date -u +%Y%m%dT%H%M%SZ).csv"
  echo "shape,format,layout,threads,decode_tok_s,prefill_tok_s,weight_bytes_per_token,effective_gb_s,read_gb_s,pct_of_read,pct_of_peak_read" > "$DATA"
fi
for shape in $SHAPES; do
  model=$(model_for "$shape")
  for fmt in $FORMATS; do
    for layout in $LAYOUTS; do
      art="$WORK/$shape-$fmt-$layout.kiln"
      "$KILN" compile "$model" --target host --weights "$fmt" --layout "$layout" --ctx "$CTX" \
        -o "$art" 2>/dev/null
      for t in $THREADS; do
        log=$("$RUN" bench "$art" -p 64 -n 64 -r "$REPS" --threads "$t")
        dec=$(echo "$log" | awk '/^decode/ {print $2}')
        pre=$(echo "$log" | awk '/^prefill/ {print $2}')
        bpt=$(echo "$log" | awk '/^weights\/token/ {print $2}')
        gbs=$(echo "$log" | awk '/^effective/ {print $2}')
        bw=$(echo "$log" | awk '/^read bandwidth/ {print $3}')
        pct=$(echo "$log" | awk '/^of bandwidth/ {print $3}')
        peak_pct=$(echo "$log" | awk '/^of peak read/ {print $4}')
        echo "| $shape | $fmt | $layout | $t | $dec | $pre | $bpt | $gbs | $bw | $pct | $peak_pct |" | tee -a "$OUT"
        [ -z "$DATA" ] || echo "$shape,$fmt,$layout,$t,$dec,$pre,$bpt,$gbs,$bw,$pct,$peak_pct" >> "$DATA"
      done
      rm -f "$art" # GBs each
    done
  done
done
echo "wrote $OUT"
[ -z "$DATA" ] || echo "wrote $DATA" >&2
