/* Memory read bandwidth, measured in the same process as the benchmark it is compared
 * with, right after each of its repetitions: n threads each stream their slice of a buffer
 * several times larger than the last level cache, with wide loads, pass after pass for as
 * long as the repetition's decode took. The result is the roofline decode is judged against
 * (tok/s <= bandwidth / weight bytes per token): bytes over time of the whole window, as
 * decode's own rate is, so both see the same share of a shared machine's slow moments. The
 * best single pass is kept too (the peak): on a busy host one 25 ms pass reads up to twice
 * another of the same minute, so a best-of-5 peak stands above any rate a second-long
 * decode can sustain.
 *
 * Two read loops take turns, pass by pass: a plain one, and one that also asks for the
 * lines PREFETCH_AHEAD bytes ahead in each lane. The faster (by its bytes over its own
 * time) is the roofline: kiln's decode kernels prefetch where that pays, so the plain loop
 * alone is not the best read everywhere (docs/perf.md, "The read probe: 4 lanes a thread,
 * 2 MiB pages, 512 MiB, a prefetching loop beside it"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln-run.h"

/* KILN_NO_THREADS: the freestanding build, which has neither threads nor madvise. */
#ifndef KILN_NO_THREADS
#include <sys/mman.h>
#endif

typedef struct {
  const uint64_t *p;
  size_t words;
  size_t ahead; /* words ahead to prefetch, 0: none */
  uint64_t sink;
} slice_t;

/* A thread reads its slice as LANES forward streams, 128 bytes of each in turn: more than
 * one stream per thread reads faster, and the x86 decode kernel walks its weights in lanes
 * too (DECODE_LANES). The read keeps 4, the best read known (docs/perf.md, "The read probe:
 * 4 lanes a thread, 2 MiB pages, 512 MiB, a prefetching loop beside it"). */
#define LANES 4
#define PREFETCH_AHEAD 2048 /* bytes; the x86 decode kernel's distance on AMX CPUs */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* lane: words per lane, a multiple of 16; ahead: words ahead to prefetch, 0: none (a
 * prefetch never faults, past the end included) */
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint64_t *p, size_t lane,
                                                         size_t ahead) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i < lane; i += 16)
    for (size_t k = 0; k < LANES; ++k) {
      const uint64_t *q = p + k * lane + i;
      if (ahead) {
        _mm_prefetch((const char *)(q + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(q + ahead + 8), _MM_HINT_T0);
      }
      a = _mm256_xor_si256(a, _mm256_load_si256((const __m256i *)q));
      b = _mm256_xor_si256(b, _mm256_load_si256((const __m256i *)(q + 4)));
      c = _mm256_xor_si256(c, _mm256_load_si256((const __m256i *)(q + 8)));
      d = _mm256_xor_si256(d, _mm256_load_si256((const __m256i *)(q + 12)));
    }
  a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  uint64_t out[4];
  _mm256_storeu_si256((__m256i *)out, a);
  return out[0] ^ out[1] ^ out[2] ^ out[3];
}
#endif

static uint64_t sum_scalar(const uint64_t *p, size_t lane, size_t ahead) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < lane; i += 4)
    for (size_t k = 0; k < LANES; ++k) {
      const uint64_t *q = p + k * lane + i;
#if defined(__GNUC__) || defined(__clang__)
      if (ahead && i % 8 == 0)
        __builtin_prefetch(q + ahead);
#endif
      a ^= q[0];
      b ^= q[1];
      c ^= q[2];
      d ^= q[3];
    }
  return a ^ b ^ c ^ d;
}

static void *stream(void *arg) {
  slice_t *s = arg;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) {
    s->sink = sum_avx2(s->p, s->words / LANES, s->ahead);
    return NULL;
  }
#endif
  s->sink = sum_scalar(s->p, s->words / LANES, s->ahead);
  return NULL;
}

struct run_probe_s {
  uint64_t *buf;
  size_t bytes;
};

run_probe_t *run_probe_open(size_t bytes) {
  run_probe_t *p = malloc(sizeof *p);
  if (!p)
    return NULL;
  /* In 2 MiB pages where the OS gives them (Linux THP on request): the roofline is the
   * best streaming read, and with 4 KiB pages it read ~7% less here (1 thread, median of 7
   * alternating pairs), while the kernel already maps much of a cached artifact's weights
   * with 2 MiB pages. */
#ifdef MADV_HUGEPAGE
  const size_t huge = (size_t)2 << 20;
#else
  const size_t huge = 4096; /* the freestanding C library's largest alignment */
#endif
  p->bytes = bytes / huge * huge;
  p->buf = aligned_alloc(huge, p->bytes);
  if (!p->buf) {
    free(p);
    return NULL;
  }
#ifdef MADV_HUGEPAGE
  (void)madvise(p->buf, p->bytes, MADV_HUGEPAGE);
#endif
  memset(p->buf, 0x5a, p->bytes); /* touch every page before timing */
  return p;
}

void run_probe_close(run_probe_t *p) {
  if (!p)
    return;
  free(p->buf);
  free(p);
}

run_probe_read_t run_probe_read(run_probe_t *probe, uint32_t n_threads, double min_seconds) {
  n_threads = run_probe_threads(n_threads);
  uint64_t *buf = probe->buf;
  const size_t words = probe->bytes / 8, per = words / n_threads / (16 * LANES) * (16 * LANES);
  const double bytes = (double)(per * 8 * n_threads);
  slice_t slices[RUN_PROBE_MAX_THREADS];
  run_probe_read_t loop[2] = {{0.0, 0.0}, {0.0, 0.0}}; /* plain, prefetching */
  double total_s = 0.0, loop_s[2] = {0.0, 0.0}, loop_bytes[2] = {0.0, 0.0};
  const double until = min_seconds < RUN_PROBE_MAX_SECONDS ? min_seconds : RUN_PROBE_MAX_SECONDS;
  /* each loop gets at least RUN_PROBE_MIN_PASSES */
  for (int pass = 0; pass < 2 * RUN_PROBE_MIN_PASSES ||
                     (total_s < until && pass < 2 * RUN_PROBE_MAX_PASSES);
       ++pass) {
    const int l = pass & 1;
    for (uint32_t t = 0; t < n_threads; ++t)
      slices[t] = (slice_t){buf + t * per, per, l ? PREFETCH_AHEAD / 8 : 0, 0};
    const double s = run_probe_timed(n_threads, stream, slices, sizeof *slices);
    total_s += s;
    loop_s[l] += s;
    loop_bytes[l] += bytes;
    if (bytes / s / 1e9 > loop[l].peak_gbs)
      loop[l].peak_gbs = bytes / s / 1e9;
  }
  volatile uint64_t keep = slices[0].sink; /* the loads must not be optimised away */
  (void)keep;
  for (int l = 0; l < 2; ++l)
    loop[l].sustained_gbs = loop_bytes[l] / loop_s[l] / 1e9;
  run_probe_read_t out = loop[1].sustained_gbs > loop[0].sustained_gbs ? loop[1] : loop[0];
  out.peak_gbs = loop[0].peak_gbs > loop[1].peak_gbs ? loop[0].peak_gbs : loop[1].peak_gbs;
  return out;
}
