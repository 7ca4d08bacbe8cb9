#!/usr/bin/env bash
# Repeats decode_ab.c's comparison over several processes. One decode_ab run sees one
# placement of each artifact's weights in memory, and on the Zen 5 VM that alone moved an
# A/A comparison of byte-identical files by up to 6% (docs/perf.md, "Decode A/B by pairs in
# fresh processes"). Each pair here
# runs decode_ab in both orders, in fresh processes (fresh loads), and reports
# r = sqrt(B/A in "A B" / (A/B in "B A")), which cancels the side bias; the pairs' median and
# spread say how far a change of a percent or two can be trusted.
#   tests/bench/decode_ab_pairs.sh build/bin/decode-ab A.kiln B.kiln [PAIRS 4] [ROUNDS 100] [THREADS 2]
#   KILN_BENCH_OUT=build/bench-results: each pair's ratios as CSV, decode_ab_pairs-<UTC time>.csv
#   (empty: none; build/ is ignored by git)
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 DECODE_AB A.kiln B.kiln [PAIRS 4] [ROUNDS 100] [THREADS 2]" >&2
  exit 2
fi
ab=$1 a=$2 b=$3 pairs=${4:-4} rounds=${5:-100} threads=${6:-2}
for f in "$ab" "$a" "$b"; do
  [ -e "$f" ] || { echo "$0: $f does not exist" >&2; exit 2; }
done
case "$pairs" in
  '' | *[!0-9]*) pairs_ok=0 ;;
  *) pairs_ok=$((10#$pairs > 0)) ;;
esac
[ "$pairs_ok" = 1 ] || { echo "$0: PAIRS must be a positive integer" >&2; exit 2; }
pairs=$((10#$pairs))
median() { "$ab" "$1" "$2" "$threads" "$rounds" 8 | awk '/B\/A speed: median/ {sub(",", "", $4); print $4}'; }
data_dir=${KILN_BENCH_OUT-$(cd "$(dirname "$0")/../.." && pwd)/build/bench-results}
data=
if [ -n "$data_dir" ]; then
  mkdir -p "$data_dir"
  data="$data_dir/decode_ab_pairs-$(date -u +%Y%m%dT%H%M%SZ).csv"
  echo "pair,a,b,threads,rounds,b_over_a,a_over_b,r" > "$data"
fi
rs=()
for ((i = 1; i <= pairs; ++i)); do
  ab_=$(median "$a" "$b")
  ba_=$(median "$b" "$a")
  r=$(awk -v x="$ab_" -v y="$ba_" 'BEGIN {printf "%.4f", sqrt(x / y)}')
  echo "pair $i: B/A $ab_, A/B $ba_, r $r"
  [ -z "$data" ] || echo "$i,$a,$b,$threads,$rounds,$ab_,$ba_,$r" >> "$data"
  rs+=("$r")
done
[ -z "$data" ] || echo "wrote $data" >&2
printf '%s\n' "${rs[@]}" | sort -g | awk '{v[NR] = $1; l += log($1)}
  END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
       printf "r over %d pairs: median %.4f, geometric mean %.4f, range %.4f-%.4f\n",
              NR, m, exp(l / NR), v[1], v[NR]}'
