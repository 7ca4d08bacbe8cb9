/* The clock and medians the runtime benches share (cold_start.c, jitter.c, module_swap.c). */
#ifndef KILN_TESTS_BENCH_BENCH_TIME_H_
#define KILN_TESTS_BENCH_BENCH_TIME_H_

#include <stdlib.h>
#include <time.h>

static inline double bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort's comparison of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v (n > 0) and returns its median. */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* KILN_TESTS_BENCH_BENCH_TIME_H_ */
