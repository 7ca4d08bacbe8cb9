/* Per-token decode latency with a competing load, pinned vs unpinned, in one run.
 *
 *   jitter A.kiln [THREADS 2] [LOAD_THREADS 2] [DUTY 0.5] [ROUNDS 20] [TOKENS 32]
 *
 * LOAD_THREADS threads (unpinned, as another app's would be) spin for DUTY of every 10 ms
 * and sleep the rest, for the whole run. Two sessions on the artifact, one with
 * pin_threads and one without, decode TOKENS tokens in turn, ROUNDS times each (the order
 * alternates per round, so drift hits both alike). Prints p50 / p99 / max of the time of
 * one kiln_session_decode call, and tokens/s, per mode. Built by CMake as jitter-bench. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/kiln.h"
#include "bench_time.h"

static atomic_int g_stop;
static double g_duty = 0.5;

static void *load_main(void *arg) {
  (void)arg;
  volatile unsigned x = 0;
  while (!atomic_load(&g_stop)) {
    const double t0 = bench_now_s();
    while (bench_now_s() - t0 < 0.010 * g_duty)
      x = x * 1664525u + 1013904223u;
    const double rest = 0.010 * (1 - g_duty);
    struct timespec ts = {0, (long)(rest * 1e9)};
    if (rest > 0)
      nanosleep(&ts, NULL);
  }
  return NULL;
}

typedef struct {
  kiln_session_t *s;
  double *lat;
  size_t n;
  double busy;
} mode_t_;

static int run_round(mode_t_ *m, uint32_t tokens) {
  kiln_error_t err;
  kiln_session_reset(m->s);
  int32_t tok = 1;
  if (kiln_session_prefill(m->s, &tok, 1, &err) != KILN_STATUS_OK)
    return fprintf(stderr, "jitter: %s\n", err.message), 1;
  for (uint32_t i = 0; i < tokens; ++i) {
    if (kiln_session_sample(m->s, &tok, &err) != KILN_STATUS_OK)
      return fprintf(stderr, "jitter: %s\n", err.message), 1;
    const double t0 = bench_now_s();
    if (kiln_session_decode(m->s, tok, &err) != KILN_STATUS_OK)
      return fprintf(stderr, "jitter: %s\n", err.message), 1;
    const double dt = bench_now_s() - t0;
    m->lat[m->n++] = dt;
    m->busy += dt;
  }
  return 0;
}

static void report(const char *name, mode_t_ *m, uint32_t pinned) {
  qsort(m->lat, m->n, sizeof *m->lat, bench_cmp_double);
  printf("%-9s pinned %u  tokens %zu  p50 %.3f ms  p99 %.3f ms  max %.3f ms  %.1f tok/s\n", name,
         pinned, m->n, m->lat[m->n / 2] * 1e3, m->lat[(size_t)(m->n * 0.99)] * 1e3,
         m->lat[m->n - 1] * 1e3, (double)m->n / m->busy);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: jitter A.kiln [THREADS 2] [LOAD_THREADS 2] [DUTY 0.5] [ROUNDS 20] "
                    "[TOKENS 32]\n");
    return 1;
  }
  const uint32_t threads = argc > 2 ? (uint32_t)atoi(argv[2]) : 2;
  const int load = argc > 3 ? atoi(argv[3]) : 2;
  g_duty = argc > 4 ? atof(argv[4]) : 0.5;
  const uint32_t rounds = argc > 5 ? (uint32_t)atoi(argv[5]) : 20;
  const uint32_t tokens = argc > 6 ? (uint32_t)atoi(argv[6]) : 32;
  if (threads < 1 || threads > 1024 || load < 0 || load > 256 || !(g_duty >= 0 && g_duty <= 1) ||
      rounds < 1 || tokens < 1) {
    fprintf(stderr, "jitter: bad arguments\n");
    return 1;
  }
  kiln_error_t err;
  kiln_artifact_t *a;
  if (kiln_artifact_open(argv[1], NULL, &a, &err) != KILN_STATUS_OK)
    return fprintf(stderr, "jitter: %s\n", err.message), 1;
  kiln_artifact_info_t info;
  kiln_artifact_info(a, &info);
  if (tokens + 2 > info.max_ctx)
    return fprintf(stderr, "jitter: TOKENS exceeds the artifact's context\n"), 1;
  mode_t_ modes[2] = {{0}, {0}};
  for (int k = 0; k < 2; ++k) {
    kiln_session_options_t o = kiln_session_options_default();
    o.n_threads = threads;
    o.pin_threads = (uint32_t)k;
    if (kiln_session_create(a, &o, &modes[k].s, &err) != KILN_STATUS_OK)
      return fprintf(stderr, "jitter: %s\n", err.message), 1;
    modes[k].lat = malloc(sizeof(double) * rounds * tokens);
    if (!modes[k].lat)
      return 1;
  }
  pthread_t lt[256];
  for (int i = 0; i < load; ++i)
    pthread_create(&lt[i], NULL, load_main, NULL);
  int rc = 0;
  for (uint32_t r = 0; r < rounds && !rc; ++r)
    for (int j = 0; j < 2 && !rc; ++j)
      rc = run_round(&modes[(r + (uint32_t)j) % 2], tokens);
  atomic_store(&g_stop, 1);
  for (int i = 0; i < load; ++i)
    pthread_join(lt[i], NULL);
  if (!rc) {
    printf("%s: %u threads, load %d threads at %.0f%% duty, %u rounds x %u tokens per mode\n",
           argv[1], threads, load, g_duty * 100, rounds, tokens);
    kiln_session_stats_t st;
    kiln_session_stats(modes[0].s, &st);
    report("unpinned", &modes[0], st.pinned_threads);
    kiln_session_stats(modes[1].s, &st);
    report("pinned", &modes[1], st.pinned_threads);
  }
  for (int k = 0; k < 2; ++k) {
    kiln_session_destroy(modes[k].s);
    free(modes[k].lat);
  }
  kiln_artifact_close(a);
  return rc;
}
