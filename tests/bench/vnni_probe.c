/* The int8 ceiling of an AVX-512 VNNI core, measured: how many vpdpbusd a cycle it runs
 * (zmm and ymm), and which other instructions of the r16 prefill tile take the same pipes.
 * A tile block of 16 rows x 8 tokens (x86/linear_packed.c, block_dot) is 64 zmm vpdpbusd
 * plus, per token, a vcvtdq2ps, a vmulps (row scales x the token's scale), a vfmadd and a
 * broadcast of the offset from a general register; whatever of those shares vpdpbusd's
 * pipes sets the tile's floor in cycles per block, below which no scheduling gets
 * (docs/perf.md, "AVX-512 VNNI prefill tile").
 *
 * Not built by CMake (x86-64 with AVX512-VNNI only):
 *   clang-19 -O2 -march=x86-64-v4 -mavx512vnni tests/bench/vnni_probe.c -o /tmp/vnni_probe
 *   /tmp/vnni_probe [ROUNDS, 3]
 * Thread CPU time, one thread; cycles from a chain of dependent scalar adds (1 a cycle).
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

#define ITERS 20000000L

/* ns per cycle: 8 dependent adds per iteration */
static double ns_per_cycle(void) {
  uint64_t x = 1;
  const double t0 = now();
  for (long i = 0; i < ITERS; ++i)
    __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\t"
                     "add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0"
                     : "+r"(x));
  return (now() - t0) * 1e9 / ((double)ITERS * 8);
}

/* One iteration: 8 independent zmm vpdpbusd chains (more than latency x throughput) and 4
 * instructions of one kind (EXTRA) on 4 chains of their own. ns per iteration. */
#define DPBUSD_WITH(name, EXTRA)                                                          \
  static double name(void) {                                                             \
    __m512i a0 = _mm512_set1_epi32(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,      \
            a6 = a0, a7 = a0, o0 = _mm512_set1_epi32(1), o1 = o0, o2 = o0, o3 = o0;       \
    __m512 f0 = _mm512_set1_ps(1.0f), f1 = f0, f2 = f0, f3 = f0;                          \
    __m512i w = _mm512_set1_epi32(0x01020304), x = _mm512_set1_epi32(0x03030303);        \
    __m512 m = _mm512_set1_ps(1.0f);                                                     \
    int32_t g = 5;                                                                       \
    (void)o0, (void)o1, (void)o2, (void)o3, (void)f0, (void)f1, (void)f2, (void)f3;      \
    (void)m, (void)g;                                                                    \
    const double t0 = now();                                                             \
    for (long i = 0; i < ITERS; ++i) {                                                   \
      __asm__ volatile("" : "+v"(w), "+v"(x), "+v"(m), "+r"(g));                         \
      a0 = _mm512_dpbusd_epi32(a0, w, x);                                                \
      a1 = _mm512_dpbusd_epi32(a1, w, x);                                                \
      a2 = _mm512_dpbusd_epi32(a2, w, x);                                                \
      a3 = _mm512_dpbusd_epi32(a3, w, x);                                                \
      a4 = _mm512_dpbusd_epi32(a4, w, x);                                                \
      a5 = _mm512_dpbusd_epi32(a5, w, x);                                                \
      a6 = _mm512_dpbusd_epi32(a6, w, x);                                                \
      a7 = _mm512_dpbusd_epi32(a7, w, x);                                                \
      EXTRA(0);                                                                          \
      EXTRA(1);                                                                          \
      EXTRA(2);                                                                          \
      EXTRA(3);                                                                          \
    }                                                                                    \
    const double t = now() - t0;                                                         \
    __asm__ volatile("" ::"v"(a0), "v"(a1), "v"(a2), "v"(a3), "v"(a4), "v"(a5),         \
                     "v"(a6), "v"(a7));                                                  \
    __asm__ volatile("" ::"v"(o0), "v"(o1), "v"(o2), "v"(o3), "v"(f0), "v"(f1),         \
                     "v"(f2), "v"(f3));                                                  \
    return t * 1e9 / ITERS;                                                              \
  }
#define X_NONE(k)
#define X_MUL(k) f##k = _mm512_mul_ps(f##k, m)
#define X_FMA(k) f##k = _mm512_fmadd_ps(f##k, m, m)
#define X_CVT(k) (f##k = _mm512_cvtepi32_ps(o##k), o##k = _mm512_castps_si512(f##k))
#define X_ADD(k) f##k = _mm512_add_ps(f##k, m)
#define X_BCAST(k) \
  do {                                                                                   \
    o##k = _mm512_set1_epi32(g + k);                                                     \
    __asm__ volatile("" : "+v"(o##k));                                                   \
  } while (0)
#define X_AND(k) o##k = _mm512_and_si512(o##k, x)
DPBUSD_WITH(dp_none, X_NONE)
DPBUSD_WITH(dp_mul, X_MUL)
DPBUSD_WITH(dp_fma, X_FMA)
DPBUSD_WITH(dp_cvt, X_CVT)
DPBUSD_WITH(dp_add, X_ADD)
DPBUSD_WITH(dp_bcast, X_BCAST)
DPBUSD_WITH(dp_and, X_AND)
static const struct {
  const char *name;
  double (*run)(void);
} kExtra[] = {{"vmulps", dp_mul},    {"vfmadd", dp_fma},           {"vcvtdq2ps", dp_cvt},
              {"vaddps", dp_add},    {"vpbroadcastd r32", dp_bcast}, {"vpandd", dp_and}};

/* 12 independent chains of one op, ns per instruction */
#define THROUGHPUT(name, T, init, op)                                                     \
  static double name(void) {                                                             \
    T a[12];                                                                             \
    for (int k = 0; k < 12; ++k)                                                         \
      a[k] = init(k);                                                                    \
    T b = init(12);                                                                      \
    const double t0 = now();                                                             \
    for (long i = 0; i < ITERS; ++i) {                                                   \
      __asm__ volatile("" : "+v"(b));                                                    \
      for (int k = 0; k < 12; ++k)                                                       \
        a[k] = op(a[k], b);                                                              \
    }                                                                                    \
    const double t = now() - t0;                                                         \
    for (int k = 0; k < 12; ++k)                                                         \
      __asm__ volatile("" ::"v"(a[k]));                                                  \
    return t * 1e9 / ((double)ITERS * 12);                                               \
  }
#define I512(k) _mm512_set1_epi32((k) + 1)
#define I256(k) _mm256_set1_epi32((k) + 1)
#define F512(k) _mm512_set1_ps((float)((k) + 1) * 1e-9f)
#define DP512(a, b) _mm512_dpbusd_epi32(a, b, b)
#define DP256(a, b) _mm256_dpbusd_epi32(a, b, b)
#define FMA512(a, b) _mm512_fmadd_ps(a, b, a)
#define ADD512(a, b) _mm512_add_ps(a, b)
THROUGHPUT(tp_dp512, __m512i, I512, DP512)
THROUGHPUT(tp_dp256, __m256i, I256, DP256)
THROUGHPUT(tp_fma512, __m512, F512, FMA512)
THROUGHPUT(tp_add512, __m512, F512, ADD512)

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 3;
  if (rounds < 1 || rounds > 100) {
    fprintf(stderr, "usage: %s [ROUNDS 1-100]\n", argv[0]);
    return 2;
  }
  for (int r = 0; r < rounds; ++r) {
    const double c = ns_per_cycle();
    printf("round %d: %.2f GHz\n", r + 1, 1.0 / c);
    printf("  per cycle: zmm vpdpbusd %.2f, ymm vpdpbusd %.2f, zmm vfmadd %.2f, zmm vaddps "
           "%.2f\n",
           c / tp_dp512(), c / tp_dp256(), c / tp_fma512(), c / tp_add512());
    const double base = dp_none() / c;
    printf("  8 zmm vpdpbusd: %.2f cycles; with 4 more of one kind (+4.00: the same pipes):\n   ",
           base);
    const int n = (int)(sizeof kExtra / sizeof kExtra[0]);
    for (int e = 0; e < n; ++e)
      printf(" %s %+.2f%s", kExtra[e].name, kExtra[e].run() / c - base, e + 1 < n ? "," : "\n");
  }
  return 0;
}
