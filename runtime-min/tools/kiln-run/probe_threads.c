/* What the read and compute probes share: n threads run one function at once, each on its
 * own argument, and the elapsed time is the probe's measurement. */
#include <time.h>

#include "kiln-run.h"

/* KILN_NO_THREADS: the freestanding build, which has no threads - one only. */
#ifndef KILN_NO_THREADS
#include <pthread.h>
#endif

uint32_t run_probe_threads(uint32_t n_threads) {
#ifdef KILN_NO_THREADS
  (void)n_threads;
  return 1;
#else
  return n_threads < 1 ? 1 : n_threads > RUN_PROBE_MAX_THREADS ? RUN_PROBE_MAX_THREADS
                                                                : n_threads;
#endif
}

double run_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double run_probe_timed(uint32_t n_threads, void *(*fn)(void *), void *args, size_t arg_size) {
  char *base = args;
  const double t0 = run_now_s();
#ifndef KILN_NO_THREADS
  pthread_t tids[RUN_PROBE_MAX_THREADS];
  int started[RUN_PROBE_MAX_THREADS];
  for (uint32_t t = 1; t < n_threads; ++t)
    started[t] = pthread_create(&tids[t], NULL, fn, base + t * arg_size) == 0;
#endif
  fn(base);
#ifdef KILN_NO_THREADS
  (void)n_threads; /* run_probe_threads gave 1 */
  (void)arg_size;
#else
  /* a thread that could not start runs its share here, after the others: a lower number,
   * never a join of an invalid handle */
  for (uint32_t t = 1; t < n_threads; ++t) {
    if (started[t])
      pthread_join(tids[t], NULL);
    else
      fn(base + t * arg_size);
  }
#endif
  return run_now_s() - t0;
}
