#!/usr/bin/env bash
# Executed Hexagon packets per call of the q8_0 and q4_0 linear micro-kernels (ggml rows:
# kiln_uk_linear; r16/r32 repacked: kiln_uk_linear_packed), generic C against HVX, counted exactly from qemu's exec log: with -singlestep every translation
# block is one packet, and -d nochain,exec logs one "Trace" line per block executed.
# Each (kernel, format) runs packets.elf twice, with CALLS_0 and CALLS_1 calls, and
# prints (packets_1 - packets_0) / (CALLS_1 - CALLS_0): setup and exit cancel.
#
#   count_packets.sh [OUT IN [N_TOKENS]]     (default 2048 2048 1)
# Environment: PACKETS_ELF (default build/tests/emu/hexagon/packets.elf, built by the
# kiln_emu_hexagon target), QEMU (qemu-hexagon-static), CALLS_0/CALLS_1 (0 and 1),
# KERNELS ("generic hvx"), FORMATS ("q8_0 q4_0 q8_0_r16 q4_0_r16 q8_0_r32 q4_0_r32"; also
# q4_1_r16 q4_1_r32, and q4_K_r16 q5_K_r16 q6_K_r16 with IN a multiple of 256),
# SHARD (row groups per l2fetch'd weight shard of the packed formats, default 0: none).
# Speed: qemu logs about 0.2 M packets/s here; the generic q8_0 kernel at 2048 x 2048 is
# ~19 M packets per call (about 2 minutes), the whole default run about 12 minutes.
set -euo pipefail

elf=${PACKETS_ELF:-build/tests/emu/hexagon/packets.elf}
qemu=${QEMU:-qemu-hexagon-static}
out=${1:-2048}
in=${2:-2048}
n=${3:-1}
c0=${CALLS_0:-0}
c1=${CALLS_1:-1}
shard=${SHARD:-0}

if [[ ! -f $elf ]]; then
  echo "count_packets.sh: $elf not found (build the kiln_emu_hexagon target, or set PACKETS_ELF)" >&2
  exit 2
fi
if ! command -v "$qemu" >/dev/null; then
  echo "count_packets.sh: $qemu not found (scripts/install-deps.sh installs qemu-user-static)" >&2
  exit 2
fi
for v in "$out" "$in" "$n" "$c0" "$c1" "$shard"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "count_packets.sh: '$v' is not a number" >&2; exit 2; }
done
(( c1 > c0 )) || { echo "count_packets.sh: CALLS_1 must exceed CALLS_0" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# packets FORMAT KERNEL CALLS -> executed packets of the whole program
packets() {
  local count
  count=$({ "$qemu" -cpu v67 -singlestep -d nochain,exec -D /dev/fd/3 \
              "$elf" "$1" "$2" "$out" "$in" "$n" "$3" "$shard" >"$tmp/stdout" 2>"$tmp/stderr"
            echo $? >"$tmp/rc"; } 3>&1 | grep -c '^Trace' || true)
  if [[ $(cat "$tmp/rc") != 0 ]]; then
    echo "count_packets.sh: $elf $1 $2 failed:" >&2
    cat "$tmp/stdout" "$tmp/stderr" >&2
    exit 1
  fi
  echo "$count"
}

blocks=$(( (in + 31) / 32 ))
printf '%-8s %-9s %-20s %14s %18s\n' kernel format shape packets/call "per (row, block)"
for f in ${FORMATS:-q8_0 q4_0 q8_0_r16 q4_0_r16 q8_0_r32 q4_0_r32}; do
  for k in ${KERNELS:-generic hvx}; do
    p0=$(packets "$f" "$k" "$c0")
    p1=$(packets "$f" "$k" "$c1")
    per=$(( (p1 - p0) / (c1 - c0) ))
    printf '%-8s %-9s %-20s %14d %18s\n' "$k" "$f" "${out}x${in} n=$n" "$per" \
      "$(awk -v p="$per" -v r="$out" -v b="$blocks" -v t="$n" 'BEGIN { printf "%.2f", p / (r * b * t) }')"
  done
done
