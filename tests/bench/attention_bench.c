/* One decode step of kiln_uk_attention for one TinyLlama-shaped layer (32 heads, 4 KV heads,
 * head_dim 64, 2048 positions) at position P (argument, default 2000), per KV cache format:
 * median and min of 31 timings of 20 calls, one thread. Not built by CMake; link it with a
 * native kernel library of the build (docs/architecture.md, "KV cache storage"):
 *   gcc -O2 -march=x86-64-v3 -Icodegen/common -Iruntime-min/include \
 *       tests/bench/attention_bench.c build/lib/libkiln_ukernels_x86_v4.a -lm -o /tmp/ab
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ukernel_abi.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  const int heads = 32, kvh = 4, hd = 64, ctx = 2048, pos = argc > 1 ? atoi(argv[1]) : 2000;
  const unsigned fk[3] = {0, 1, 24}, fv[3] = {0, 1, 1};
  const char *names[3] = {"f32", "f16", "k=int8,v=f16"};
  float *q = malloc(4 * heads * hd), *k = malloc(4 * kvh * hd), *v = malloc(4 * kvh * hd);
  for (int i = 0; i < heads * hd; ++i) q[i] = (float)((i * 37 % 101) - 50) / 50.0f;
  for (int i = 0; i < kvh * hd; ++i) { k[i] = (float)((i * 53 % 97) - 48) / 48.0f; v[i] = k[i] * 0.5f; }
  uint8_t *kc = malloc((size_t)ctx * kvh * hd * 4), *vc = malloc((size_t)ctx * kvh * hd * 4);
  float *ks = malloc((size_t)ctx * kvh * 4), *scores = malloc(4 * heads * ctx), *out = malloc(4 * heads * hd);
  for (int f = 0; f < 3; ++f) {
    /* fill the cache with positions 0..pos */
    for (int p = 0; p <= pos; ++p)
      kiln_uk_attention(0, q, k, v, 1, &p, heads, kvh, hd, 0.125f, 0, fk[f], fv[f], kc, fk[f] == 24 ? ks : 0, vc, ctx, 0, 0, 0, 0, scores, out);
    double t[31];
    for (int r = 0; r < 31; ++r) {
      double t0 = now();
      for (int it = 0; it < 20; ++it)
        kiln_uk_attention(0, q, k, v, 1, &pos, heads, kvh, hd, 0.125f, 0, fk[f], fv[f], kc, fk[f] == 24 ? ks : 0, vc, ctx, 0, 0, 0, 0, scores, out);
      t[r] = (now() - t0) / 20;
    }
    qsort(t, 31, sizeof t[0], cmp);
    printf("%-14s pos %d: median %.1f us, min %.1f us per decode step (one layer, 1 thread)\n", names[f], pos, t[15] * 1e6, t[0] * 1e6);
  }
  return 0;
}
