/* The streaming read against the work done per 64-byte line: does a loop that does a
 * decode kernel's amount of arithmetic per line still read as fast as a bare read loop?
 *
 * Two threads, each reads its half of a 512 MiB buffer (2 MiB pages where Linux gives them)
 * in LANES forward streams, one zmm load per line and lane, then OPS operations on it:
 *   0: one vpxord (kiln-run bench's read loop does a load and an xor per 32 bytes);
 *   1, 2, 4, 8: 1, 2, 4 or 6 vpdpbusd into two accumulators per lane, plus from 2 on the
 *      vpandd / vpsrlw that split q4 nibbles, from 8 on 4 more integer operations.
 * The decode kernel (x86/linear_packed.c, q4_0_r16) does ~35 instructions per 288-byte
 * block of a lane, ~7.8 per line: between OPS 4 and 8. Prints the best of ROUNDS passes in
 * GB/s. OPS and LANES are compile-time, so no branch sits in the loop.
 *
 * Not built by CMake (AVX512-VNNI only):
 *   for l in 2 4; do for k in 0 1 2 4 8; do clang-19 -O2 -march=x86-64-v4 -mavx512vnni \
 *     -DOPS=$k -DLANES=$l tests/bench/read_density_probe.c -o /tmp/rdp_${l}_$k -lpthread; done; done
 *   for l in 4 2; do for k in 0 1 2 4 8; do /tmp/rdp_${l}_$k 5; done; done
 * On a machine whose read moves minute by minute, run the ten in one loop many times and
 * compare within a round.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef OPS
#define OPS 0
#endif
#ifndef LANES
#define LANES 4
#endif
#if LANES != 2 && LANES != 4
#error "LANES is 2 or 4"
#endif

static const size_t kTotal = (size_t)512 << 20;
static uint8_t *g_buf;
static pthread_barrier_t g_start;
static double g_secs[2];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The work on one loaded line w, into one lane's accumulators a0, a1. */
#define LINE_OPS(a0, a1, w)                                                                \
  do {                                                                                     \
    if (OPS == 0)                                                                          \
      a0 = _mm512_xor_si512(a0, w);                                                        \
    if (OPS >= 1)                                                                          \
      a0 = _mm512_dpbusd_epi32(a0, w, x);                                                  \
    if (OPS >= 2)                                                                          \
      a1 = _mm512_dpbusd_epi32(a1, _mm512_and_si512(w, lo4), x);                           \
    if (OPS >= 4) {                                                                        \
      a0 = _mm512_dpbusd_epi32(a0, _mm512_srli_epi16(w, 4), x);                            \
      a1 = _mm512_dpbusd_epi32(a1, w, x2);                                                 \
    }                                                                                      \
    if (OPS >= 8) {                                                                        \
      a0 = _mm512_dpbusd_epi32(a0, _mm512_and_si512(w, hi4), x2);                          \
      a1 = _mm512_dpbusd_epi32(a1, _mm512_xor_si512(w, lo4), x);                           \
      a0 = _mm512_add_epi32(a0, w);                                                        \
      a1 = _mm512_sub_epi32(a1, w);                                                        \
    }                                                                                      \
  } while (0)

static void *reader(void *arg) {
  const int id = (int)(intptr_t)arg;
  const size_t half = kTotal / 2, lane = half / LANES;
  const uint8_t *base = g_buf + id * half;
  const __m512i x = _mm512_set1_epi32(0x01020304), x2 = _mm512_set1_epi32(0x05060708);
  const __m512i lo4 = _mm512_set1_epi8(15), hi4 = _mm512_set1_epi8((char)0xF0);
  __m512i acc[LANES][2];
  for (int l = 0; l < LANES; ++l)
    acc[l][0] = acc[l][1] = _mm512_setzero_si512();
  pthread_barrier_wait(&g_start);
  const double t0 = now();
  for (size_t off = 0; off < lane; off += 64)
    for (int l = 0; l < LANES; ++l) {
      const __m512i w = _mm512_load_si512(base + l * lane + off);
      LINE_OPS(acc[l][0], acc[l][1], w);
    }
  g_secs[id] = now() - t0;
  __m512i s = _mm512_setzero_si512();
  for (int l = 0; l < LANES; ++l)
    s = _mm512_add_epi32(s, _mm512_add_epi32(acc[l][0], acc[l][1]));
  volatile int sink = _mm512_reduce_add_epi32(s);
  (void)sink;
  return NULL;
}

/* One pass over the buffer by both threads; GB/s by the slower. */
static double pass(void) {
  pthread_t t[2];
  pthread_barrier_init(&g_start, NULL, 2);
  for (intptr_t i = 0; i < 2; ++i)
    pthread_create(&t[i], NULL, reader, (void *)i);
  for (int i = 0; i < 2; ++i)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&g_start);
  const double s = g_secs[0] > g_secs[1] ? g_secs[0] : g_secs[1];
  return kTotal / s / 1e9;
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 5;
  if (rounds < 1 || rounds > 1000) {
    fprintf(stderr, "read_density_probe: ROUNDS is 1..1000, got '%s'\n", argv[1]);
    return 1;
  }
  g_buf = aligned_alloc((size_t)2 << 20, kTotal);
  if (!g_buf) {
    fprintf(stderr, "read_density_probe: cannot allocate 512 MiB\n");
    return 1;
  }
  madvise(g_buf, kTotal, MADV_HUGEPAGE);
  memset(g_buf, 1, kTotal);
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const double g = pass();
    best = g > best ? g : best;
  }
  printf("lanes %d ops %d %.1f GB/s\n", LANES, OPS, best);
  return 0;
}
