/* Time to first token from a cold and a warm page cache, with and without prefetch.
 *
 *   cold_start A.kiln [REPS 3] [PROMPT 16] [THREADS 2]
 *
 * Cold: the artifact's pages are evicted first (posix_fadvise DONTNEED; mincore confirms
 * how much stayed resident, printed). Then open (kiln_artifact_open_with, mapped; prefetch
 * 0 or 1), session create and a PROMPT-token prefill: TTFT is from before the open to the
 * first logits. Warm: the same right after, the file cached. The four cases alternate per
 * repetition; medians are printed. Built by CMake as cold-start-bench. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "bench_time.h"

/* Evicts the file's clean pages; returns the share still resident (mincore). */
static double evict(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -1;
  struct stat st;
  fstat(fd, &st);
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), n = ((size_t)st.st_size + page - 1) / page;
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  unsigned char *vec = malloc(n);
  size_t resident = 0;
  if (m != MAP_FAILED && vec && mincore(m, (size_t)st.st_size, vec) == 0)
    for (size_t i = 0; i < n; ++i)
      resident += vec[i] & 1;
  if (m != MAP_FAILED)
    munmap(m, (size_t)st.st_size);
  free(vec);
  close(fd);
  return n ? (double)resident / (double)n : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cold_start A.kiln [REPS 3] [PROMPT 16] [THREADS 2]\n");
    return 1;
  }
  const int reps = argc > 2 ? atoi(argv[2]) : 3;
  const int prompt = argc > 3 ? atoi(argv[3]) : 16;
  const int threads = argc > 4 ? atoi(argv[4]) : 2;
  if (reps < 1 || reps > 100 || prompt < 1 || prompt > 4096 || threads < 1 || threads > 1024) {
    fprintf(stderr, "cold_start: bad arguments\n");
    return 1;
  }
  double open_s[2][2][100], ttft[2][2][100], left[2][100];
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)prompt);
  for (int i = 0; i < prompt; ++i)
    ids[i] = 1 + i % 100;
  for (int r = 0; r < reps; ++r)
    for (int k = 0; k < 2; ++k) {
      const int prefetch = (r + k) % 2;
      for (int warm = 0; warm < 2; ++warm) {
        if (!warm)
          left[prefetch][r] = evict(argv[1]);
        kiln_error_t err;
        kiln_artifact_options_t ao = kiln_artifact_options_default();
        ao.prefetch = (uint32_t)prefetch;
        const double t0 = bench_now_s();
        kiln_artifact_t *a;
        if (kiln_artifact_open_with(argv[1], &ao, &a, &err) != KILN_STATUS_OK)
          return fprintf(stderr, "cold_start: %s\n", err.message), 1;
        const double t1 = bench_now_s();
        kiln_session_options_t so = kiln_session_options_default();
        so.n_threads = (uint32_t)threads;
        kiln_session_t *s;
        if (kiln_session_create(a, &so, &s, &err) != KILN_STATUS_OK ||
            kiln_session_prefill(s, ids, (size_t)prompt, &err) != KILN_STATUS_OK)
          return fprintf(stderr, "cold_start: %s\n", err.message), 1;
        const double t2 = bench_now_s();
        open_s[prefetch][warm][r] = t1 - t0;
        ttft[prefetch][warm][r] = t2 - t0;
        kiln_session_destroy(s);
        kiln_artifact_close(a);
      }
    }
  printf("%s: %d repetitions, %d-token prompt, %d threads (medians)\n", argv[1], reps, prompt,
         threads);
  for (int p = 0; p < 2; ++p) {
    const double res = bench_median(left[p], reps);
    for (int w = 0; w < 2; ++w)
      printf("prefetch %-3s %-5s open %8.1f ms  TTFT %8.1f ms%s\n", p ? "on" : "off",
             w ? "warm" : "cold", bench_median(open_s[p][w], reps) * 1e3,
             bench_median(ttft[p][w], reps) * 1e3, w ? "" : "");
    printf("  (cold: %.1f%% of the file still resident after eviction)\n", res * 100);
  }
  free(ids);
  return 0;
}
