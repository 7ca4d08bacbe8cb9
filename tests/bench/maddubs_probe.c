/* The int8 ceiling of an AVX2 core without VNNI, measured: how fast vpmaddubsw runs alone,
 * next to fp32 FMA, and as the q4 prefill tile feeds it (one 4-byte activation broadcast
 * from memory and one int16 add per vpmaddubsw). A prefill target in tok/s needs
 * (multiply-adds per token) / 32 vpmaddubsw per token on this path, so these rates bound
 * what any such kernel can reach here (docs/perf.md, "AVX2 prefill tiles").
 *
 * Not built by CMake (x86-64 with AVX2 only):
 *   clang-19 -O2 -march=x86-64-v3 tests/bench/maddubs_probe.c -o /tmp/maddubs_probe
 *   /tmp/maddubs_probe [ROUNDS, 3]
 * Thread CPU time, 10^8 iterations per loop; ns per instruction, one thread.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define CHAINS 8 /* independent accumulators: more than latency x throughput */

/* CHAINS chains of `op`, operands kept opaque so nothing is hoisted or merged */
#define REG_LOOP(name, T, init, op)                                                      \
  static double name(long n) {                                                           \
    T a[CHAINS];                                                                         \
    for (int k = 0; k < CHAINS; ++k)                                                     \
      a[k] = init(k);                                                                    \
    T b = init(CHAINS);                                                                  \
    const double t0 = now();                                                             \
    for (long i = 0; i < n; ++i) {                                                       \
      __asm__ volatile("" : "+x"(b));                                                    \
      for (int k = 0; k < CHAINS; ++k)                                                   \
        a[k] = op(a[k], b);                                                              \
    }                                                                                    \
    const double t = now() - t0;                                                         \
    __asm__ volatile("" ::"x"(a[0]), "x"(a[1]), "x"(a[2]), "x"(a[3]), "x"(a[4]),        \
                     "x"(a[5]), "x"(a[6]), "x"(a[7]));                                   \
    return t * 1e9 / ((double)n * CHAINS);                                               \
  }
#define I8(k) _mm256_set1_epi8((char)((k) + 1))
#define F32(k) _mm256_set1_ps((float)((k) + 1) * 1e-9f)
#define MADDUBS(a, b) _mm256_maddubs_epi16(a, b)
#define FMA(a, b) _mm256_fmadd_ps(a, b, a)
#define ADDW(a, b) _mm256_add_epi16(a, b)
REG_LOOP(reg_maddubs, __m256i, I8, MADDUBS)
REG_LOOP(reg_fma, __m256, F32, FMA)
REG_LOOP(reg_addw, __m256i, I8, ADDW)

/* 4 vpmaddubsw and 4 FMA per iteration: do they share pipes? ns per instruction */
static double mixed(long n) {
  __m256i a[4];
  __m256 f[4];
  for (int k = 0; k < 4; ++k)
    a[k] = I8(k), f[k] = F32(k);
  __m256i b = I8(9);
  __m256 g = F32(9);
  const double t0 = now();
  for (long i = 0; i < n; ++i) {
    __asm__ volatile("" : "+x"(b), "+x"(g));
    for (int k = 0; k < 4; ++k)
      a[k] = MADDUBS(a[k], b), f[k] = FMA(f[k], g);
  }
  const double t = now() - t0;
  __asm__ volatile("" ::"x"(a[0]), "x"(a[1]), "x"(a[2]), "x"(a[3]), "x"(f[0]), "x"(f[1]),
                   "x"(f[2]), "x"(f[3]));
  return t * 1e9 / ((double)n * 8);
}

/* The tile's inner step: p[k] += vpmaddubsw(w, broadcast of 4 activation bytes) for 8
 * chunks; ns per vpmaddubsw (with its broadcast load and add) */
static double tile_step(long n, const int8_t *x) {
  __m256i p[8];
  for (int k = 0; k < 8; ++k)
    p[k] = _mm256_setzero_si256();
  __m256i w = I8(3);
  const double t0 = now();
  for (long i = 0; i < n; ++i) {
    const int8_t *q = x + (i & 63) * 32;
    __asm__ volatile("" : "+x"(w), "+r"(q));
    for (int k = 0; k < 8; ++k)
      p[k] = ADDW(p[k], MADDUBS(w, _mm256_set1_epi32(*(const int32_t *)(q + 4 * k))));
  }
  const double t = now() - t0;
  __asm__ volatile("" ::"x"(p[0]), "x"(p[1]), "x"(p[2]), "x"(p[3]), "x"(p[4]), "x"(p[5]),
                   "x"(p[6]), "x"(p[7]));
  return t * 1e9 / ((double)n * 8);
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 3;
  if (rounds < 1 || rounds > 1000) {
    fprintf(stderr, "maddubs_probe: ROUNDS must be 1..1000\n");
    return 1;
  }
  static int8_t x[64 * 32 + 32];
  for (size_t i = 0; i < sizeof x; ++i)
    x[i] = (int8_t)(i * 37);
  const long n = 100000000;
  printf("ns per instruction, 1 thread: vpmaddubsw | fma | vpaddw | maddubs+fma mixed | "
         "tile step (bcast + vpmaddubsw + vpaddw)\n");
  for (int r = 0; r < rounds; ++r) {
    const double m = reg_maddubs(n), f = reg_fma(n), a = reg_addw(n), mx = mixed(n),
                 ts = tile_step(n, x);
    printf("%.3f | %.3f | %.3f | %.3f | %.3f   (tile step: %.1f int8 GMAC/s)\n", m, f, a, mx,
           ts, 32.0 / ts);
  }
  return 0;
}
