/* Swapping a module on a live session against reopening the artifact (warm page cache).
 *
 *   module_swap A.kiln M1.kiln M2.kiln [REPS 5] [THREADS 2]
 *
 * swap: kiln_session_apply_modules from M1 to M2 (the previous module's tensors go back
 * to the base, the new one's are written into the session's copy-on-write view), then the
 * first decode step after it (it faults the view's pages in). reopen: what an app without
 * modules does to change weights - close session and artifact, kiln_artifact_open, session
 * create, and the first decode step. Medians over REPS; the two alternate per repetition.
 * Also prints the module and artifact sizes (the update an app downloads). Built by CMake
 * as module-swap-bench. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/kiln.h"
#include "bench_time.h"
#include "kiln/module.h"

static int fail(const char *what, const kiln_error_t *err) {
  fprintf(stderr, "module_swap: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
  return 1;
}

static kiln_session_t *session(kiln_artifact_t *a, uint32_t threads, kiln_error_t *err) {
  kiln_session_options_t o = kiln_session_options_default();
  o.n_threads = threads;
  kiln_session_t *s = NULL;
  return kiln_session_create(a, &o, &s, err) == KILN_STATUS_OK ? s : NULL;
}

/* One token at position 0, timed. */
static double step(kiln_session_t *s, kiln_error_t *err, int *bad) {
  kiln_session_reset(s);
  const int32_t t = 1;
  const double t0 = bench_now_s();
  *bad |= kiln_session_prefill(s, &t, 1, err) != KILN_STATUS_OK;
  return bench_now_s() - t0;
}

int main(int argc, char **argv) {
  if (argc < 4)
    return fail("usage: module_swap A.kiln M1.kiln M2.kiln [REPS] [THREADS]", NULL);
  const int reps = argc > 4 ? atoi(argv[4]) : 5;
  const uint32_t threads = argc > 5 ? (uint32_t)atoi(argv[5]) : 2;
  if (reps < 1 || reps > 1000 || threads < 1 || threads > 256)
    return fail("REPS 1..1000, THREADS 1..256", NULL);
  kiln_error_t err;
  kiln_artifact_t *a = NULL;
  kiln_module_t *m[2] = {NULL, NULL};
  if (kiln_artifact_open(argv[1], NULL, &a, &err) != KILN_STATUS_OK)
    return fail(argv[1], &err);
  for (int i = 0; i < 2; ++i)
    if (kiln_module_open(argv[2 + i], NULL, NULL, &m[i], &err) != KILN_STATUS_OK)
      return fail(argv[2 + i], &err);
  kiln_session_t *s = session(a, threads, &err);
  if (!s)
    return fail("session", &err);
  double *times = calloc((size_t)reps * 5, sizeof *times);
  if (!times)
    return fail("out of memory", NULL);
  double *swap = times, *swap_step = times + reps, *reopen = times + 2 * reps,
         *reopen_step = times + 3 * reps, *plain_step = times + 4 * reps;
  int bad = 0;
  const kiln_module_t *one = m[0];
  bad |= kiln_session_apply_modules(s, &one, 1, &err) != KILN_STATUS_OK;
  for (int r = 0; r < reps && !bad; ++r) {
    plain_step[r] = step(s, &err, &bad); /* the view already faulted in */
    const kiln_module_t *next = m[(r + 1) % 2];
    double t0 = bench_now_s();
    bad |= kiln_session_apply_modules(s, &next, 1, &err) != KILN_STATUS_OK;
    swap[r] = bench_now_s() - t0;
    swap_step[r] = step(s, &err, &bad);

    t0 = bench_now_s();
    kiln_artifact_t *b = NULL;
    if (kiln_artifact_open(argv[1], NULL, &b, &err) != KILN_STATUS_OK)
      return fail(argv[1], &err);
    kiln_session_t *t = session(b, threads, &err);
    if (!t)
      return fail("session", &err);
    reopen[r] = bench_now_s() - t0;
    reopen_step[r] = step(t, &err, &bad);
    kiln_session_destroy(t);
    kiln_artifact_close(b);
  }
  if (bad)
    return fail("run", &err);
  kiln_module_info_t i0, i1;
  kiln_module_info(m[0], &i0);
  kiln_module_info(m[1], &i1);
  kiln_artifact_info_t ai;
  kiln_artifact_info(a, &ai);
  printf("%d repetitions, %u threads (medians, warm page cache)\n", reps, threads);
  printf("swap   apply %.3f ms, then first token %.3f ms\n", bench_median(swap, reps) * 1e3,
         bench_median(swap_step, reps) * 1e3);
  printf("reopen open+session %.3f ms, then first token %.3f ms\n",
         bench_median(reopen, reps) * 1e3, bench_median(reopen_step, reps) * 1e3);
  printf("steady first token %.3f ms\n", bench_median(plain_step, reps) * 1e3);
  printf("module %s: %llu bytes (%u tensors, %llu tensor bytes); %s: %llu bytes; artifact "
         "%llu bytes (%.2f%%)\n",
         argv[2], (unsigned long long)i0.file_bytes, i0.num_tensors,
         (unsigned long long)i0.tensor_bytes, argv[3], (unsigned long long)i1.file_bytes,
         (unsigned long long)ai.file_bytes, 100.0 * (double)i0.file_bytes / (double)ai.file_bytes);
  kiln_session_destroy(s);
  kiln_module_close(m[0]);
  kiln_module_close(m[1]);
  kiln_artifact_close(a);
  free(times);
  return 0;
}
