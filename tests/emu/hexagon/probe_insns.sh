#!/bin/bash
# probe_insns.sh [QEMU] [CPU]: which post-v67 Hexagon instructions a qemu-hexagon decodes.
# Builds one tiny static program per instruction (clang-19, -mcpu=hexagonv73) and runs it
# under QEMU (default qemu-hexagon-static) with -cpu CPU (default v73; qemu 7.2 knows only
# v66/v67). Prints "runs" or the emulator's complaint. Not a ctest: it records what the
# emulators here cannot run (tests/emu/hexagon/README.md, "What qemu cannot run").
set -u
QEMU=${1:-qemu-hexagon-static}
CPU=${2:-v73}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/p.c" <<'C'
typedef long HVX_Vector __attribute__((__vector_size__(128))) __attribute__((aligned(128)));
HVX_Vector va, vb;
volatile HVX_Vector vc;
volatile long sink;
void _start(void) {
#ifdef HVX_OP
  vc = HVX_OP(va, vb);
#else
  long r;
  __asm__ volatile(ASM : "=r"(r) : : "memory");
  sink = r;
#endif
  register long r0 __asm__("r0") = 0;
  register long r6 __asm__("r6") = 93; /* exit */
  __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r6) : "memory");
  for (;;) {
  }
}
C
probe() { # name, -D definition
  if ! clang-19 --target=hexagon -mcpu=hexagonv73 -mhvx -mhvx-length=128b -mhvx-qfloat \
      -mhvx-ieee-fp -O2 -G0 -ffreestanding -nostdlib "$2" -c "$work/p.c" -o "$work/p.o" \
      2> "$work/err" || ! ld.lld-19 -static -e _start "$work/p.o" -o "$work/p.elf" 2>> "$work/err"; then
    printf '%-28s does not build: %s\n' "$1" "$(head -c 80 "$work/err" | tr '\n' ' ')"
    return
  fi
  if { (cd "$work" && exec "$QEMU" -cpu "$CPU" ./p.elf > out 2>&1); } 2> /dev/null; then
    printf '%-28s runs\n' "$1"
  else
    printf '%-28s fails: %s\n' "$1" "$(grep -m1 -o 'ERROR.*' "$work/out" | head -c 90)"
  fi
}
echo "$("$QEMU" --version | head -1), -cpu $CPU"
probe "baseline (integer HVX)" "-DHVX_OP(a,b)=__builtin_HEXAGON_V6_vaddw_128B(a,b)"
for op in vadd_sf_sf vmpy_sf_sf vadd_hf_hf vmpy_hf_hf vadd_qf32 vmpy_qf32_sf vmpy_qf16_hf vfmax_sf; do
  probe "$op" "-DHVX_OP(a,b)=__builtin_HEXAGON_V6_${op}_128B(a,b)"
done
probe "user DMA: dmpoll" '-DASM="%0 = dmpoll"'
probe "user DMA: dmwait" '-DASM="%0 = dmwait"'
