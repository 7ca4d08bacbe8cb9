/* Two to four builds of kiln_uk_linear_packed (a kernel before and after a change, or the
 * same source with different -D switches) timed in one process, in turn call by call, so
 * that a machine whose speed drifts (a VM whose neighbours come and go: AMX prefill on one
 * Sapphire Rapids VM moved 2.5x between runs of the same binary) shifts them all alike.
 * One thread; a "call" is one prefill (or decode, TOKENS 1) of TOKENS tokens over every
 * matrix of MiB of ROWS x IN weights; min and median of ROUNDS calls per build, and
 * whether each build's y is the same bits as the first's.
 *
 * Each build is compiled as an artifact's kernel is, with its entry renamed:
 *   for i in 0 1; do clang-19 -std=c11 -O2 -ffreestanding -fno-math-errno -march=x86-64-v4 \
 *     -mavx512vnni -mamx-tile -mamx-int8 -mgfni -Dkiln_uk_linear_packed=kv$i \
 *     -Dkiln_uk_linear_packed_fused=kvf$i -Icodegen/common -Icodegen/cpu/ukernels \
 *     -Icodegen/cpu/ukernels/x86 -Iruntime-min/include -c SOURCE_i -o /tmp/kv$i.o; done
 *   gcc -O2 -DBUILDS=2 -Icodegen/common -Icodegen/cpu/ukernels -Iruntime-min/include \
 *     tests/bench/linear_packed_ab.c /tmp/kv0.o /tmp/kv1.o -o /tmp/lpab
 *   /tmp/lpab q4_0_r16 [TOKENS 64] [ROUNDS 30] [MiB 32] [ROWS 5632] [IN 2048]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "kiln/quant_packed.h"
#include "ukernel_abi.h"

#ifndef BUILDS
#define BUILDS 2
#endif
typedef void kernel_fn(const kiln_exec_ctx_t *, uint32_t, const float *, int32_t, int32_t,
                       const uint8_t *, int64_t, int32_t, float *, uint8_t *, int32_t);
extern kernel_fn kv0, kv1;
#if BUILDS > 2
extern kernel_fn kv2;
#endif
#if BUILDS > 3
extern kernel_fn kv3;
#endif
static kernel_fn *const kBuilds[] = {kv0, kv1,
#if BUILDS > 2
                                     kv2,
#endif
#if BUILDS > 3
                                     kv3,
#endif
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
#if defined(__linux__)
  syscall(SYS_arch_prctl, 0x1023, 18); /* the AMX tile state (see linear_packed_bench.c) */
#endif
  const char *fname = argc > 1 ? argv[1] : "q4_0_r16";
  const uint32_t format = !strcmp(fname, "q8_0_r16")   ? KILN_TYPE_Q8_0_R16
                          : !strcmp(fname, "q4_1_r16") ? KILN_TYPE_Q4_1_R16
                                                       : KILN_TYPE_Q4_0_R16;
  const int tokens = argc > 2 ? atoi(argv[2]) : 64, rounds = argc > 3 ? atoi(argv[3]) : 30;
  const int64_t mib = argc > 4 ? atoll(argv[4]) : 32;
  const int rows = argc > 5 ? atoi(argv[5]) : 5632, in = argc > 6 ? atoi(argv[6]) : 2048;
  if (tokens < 1 || tokens > 512 || rounds < 1 || mib < 1 || rows < 16 || in < 32 || in % 32) {
    fprintf(stderr, "usage: %s q4_0_r16|q4_1_r16|q8_0_r16 [TOKENS] [ROUNDS] [MiB] [ROWS] "
                    "[IN (multiple of 32)]\n", argv[0]);
    return 2;
  }
  const int64_t group_rows = (int64_t)kiln_packed_rows(format);
  const int64_t groups = (rows + group_rows - 1) / group_rows;
  const int64_t stride = (int64_t)kiln_packed_group_bytes(format, (uint64_t)in);
  const int64_t mat_bytes = stride * groups;
  const int mats = (int)((mib << 20) / mat_bytes) + 1;
  uint8_t *w = aligned_alloc(64, (size_t)(mat_bytes * mats));
  float *x = aligned_alloc(64, sizeof(float) * (size_t)in * tokens);
  uint8_t *qx = aligned_alloc(64, kiln_packed_act_stride((uint64_t)in) * tokens);
  float *y[BUILDS];
  double *t = malloc(sizeof(double) * BUILDS * rounds);
  if (!w || !x || !qx || !t)
    return 1;
  /* as linear_packed_bench.c: every byte 0x20..0x3f, normal fp16 scales wherever they are */
  for (int64_t i = 0; i < mat_bytes * mats; ++i)
    w[i] = (uint8_t)(0x20 | ((i * 2654435761u >> 13) & 0x1f));
  for (int i = 0; i < in * tokens; ++i)
    x[i] = (float)((i * 37 % 101) - 50) / 50.0f;
  for (int v = 0; v < BUILDS; ++v)
    if (!(y[v] = aligned_alloc(64, sizeof(float) * (size_t)(groups * group_rows) * tokens)))
      return 1;
  for (int r = 0; r < rounds; ++r)
    for (int v = 0; v < BUILDS; ++v) {
      const double t0 = now();
      for (int m = 0; m < mats; ++m)
        kBuilds[v](NULL, format, x, tokens, in, w + m * mat_bytes, stride, rows, y[v], qx, 0);
      t[v * rounds + r] = now() - t0;
    }
  const double macs = (double)rows * in * mats * tokens;
  printf("%s %d x %d x %d matrices, %d token(s), 1 thread, %d rounds\n", fname, rows, in, mats,
         tokens, rounds);
  for (int v = 0; v < BUILDS; ++v) {
    double *tv = t + v * rounds;
    qsort(tv, rounds, sizeof *tv, cmp);
    printf("  build %d: min %.4f s (%.1f GMAC/s), median %.4f s (%.1f GMAC/s)%s\n", v, tv[0],
           macs / tv[0] * 1e-9, tv[rounds / 2], macs / tv[rounds / 2] * 1e-9,
           v == 0 ? ""
           : memcmp(y[v], y[0], sizeof(float) * (size_t)rows * tokens) ? ", other bits than build 0"
                                                                      : ", same bits");
  }
  return 0;
}
