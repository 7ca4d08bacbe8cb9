/* Whole-model decode of two artifacts (a kernel or pass before and after a change, compiled
 * from the same model) timed in one process, in turn: a block of BLOCK decode steps of one,
 * then a block of the other, the order swapped every round. On a VM whose memory bandwidth
 * moves by half within a minute (docs/perf.md, "Machines and conventions"), two kiln-run
 * bench runs of the same artifact a minute apart differ more than most changes do; blocks
 * a tenth of a second long, side by side, see the same machine. Prints each artifact's decode tok/s over all its
 * blocks and the median and range of B/A over the rounds (each round: B's block time
 * against A's). Both sessions exist throughout, each with its own pool; the other session's
 * workers have gone to sleep by the time a block starts (they spin ~50 us, then yield).
 *
 * Built as build/bin/decode-ab:
 *   build/bin/decode-ab A.kiln B.kiln [THREADS 2] [ROUNDS 40] [BLOCK 8]
 * The two sides are not equal (the one opened second can run several percent faster). Run
 * each pair in both orders and take the geometric mean of B/A and 1/(A/B), which cancels a
 * fixed side bias. The bias is not fixed either, so trust a change of a few percent only
 * when several pairs agree: tests/bench/decode_ab_pairs.sh runs the pairs, each in fresh
 * processes, and prints their median and range (docs/perf.md, "Decode A/B by pairs in fresh
 * processes").
 * Greedy decode from BOS, positions 0-127 over and over (kiln-run bench's 64-token prompt and
 * 32 steps sit in that range).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/kiln.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  kiln_artifact_t *art;
  kiln_session_t *s;
  uint32_t max_ctx;
  int32_t bos, next;
  double seconds;
} side_t;

static int fail(const char *what, const kiln_error_t *e) {
  fprintf(stderr, "decode_ab: %s: %s\n", what, e->message);
  return 1;
}

static int open_side(const char *path, uint32_t threads, side_t *out) {
  kiln_error_t e;
  kiln_artifact_options_t o = kiln_artifact_options_default();
  o.weights_memory = KILN_WEIGHTS_HUGE_PAGES;
  if (kiln_artifact_open_with(path, &o, &out->art, &e) != KILN_STATUS_OK)
    return fail(path, &e);
  kiln_artifact_info_t info;
  kiln_artifact_info(out->art, &info);
  out->max_ctx = info.max_ctx;
  out->bos = info.bos_id >= 0 ? info.bos_id : 0;
  kiln_session_options_t so = kiln_session_options_default();
  so.n_threads = threads;
  if (kiln_session_create(out->art, &so, &out->s, &e) != KILN_STATUS_OK)
    return fail(path, &e);
  out->next = out->bos;
  out->seconds = 0.0;
  return 0;
}

/* BLOCK greedy steps; returns their seconds, or a negative value on an error. */
static double block(side_t *d, int steps) {
  kiln_error_t e;
  const double t0 = now();
  for (int i = 0; i < steps; ++i) {
    if (kiln_session_n_past(d->s) + 1 >= d->max_ctx || kiln_session_n_past(d->s) >= 128) {
      kiln_session_reset(d->s);
      d->next = d->bos;
    }
    if (kiln_session_decode(d->s, d->next, &e) != KILN_STATUS_OK ||
        kiln_session_sample(d->s, &d->next, &e) != KILN_STATUS_OK)
      return -(double)fail("decode", &e);
  }
  return now() - t0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s A.kiln B.kiln [THREADS 2] [ROUNDS 40] [BLOCK 8]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 3 ? atoi(argv[3]) : 2;
  const int rounds = argc > 4 ? atoi(argv[4]) : 40;
  const int steps = argc > 5 ? atoi(argv[5]) : 8;
  if (threads < 1 || threads > 256 || rounds < 1 || rounds > 100000 || steps < 1 ||
      steps > 100000) {
    fprintf(stderr, "decode_ab: THREADS 1..256, ROUNDS 1..100000, BLOCK 1..100000\n");
    return 2;
  }
  side_t side[2];
  if (open_side(argv[1], (uint32_t)threads, &side[0]) ||
      open_side(argv[2], (uint32_t)threads, &side[1]))
    return 1;
  for (int k = 0; k < 2; ++k) /* warm: first touches, the pools' first jobs */
    if (block(&side[k], steps) < 0)
      return 1;
  double *ratio = malloc(sizeof(double) * (size_t)rounds);
  if (!ratio)
    return 1;
  for (int r = 0; r < rounds; ++r) {
    double t[2];
    for (int i = 0; i < 2; ++i) {
      const int k = (r & 1) ? 1 - i : i;
      t[k] = block(&side[k], steps);
      if (t[k] < 0)
        return 1;
      side[k].seconds += t[k];
    }
    ratio[r] = t[0] / t[1]; /* B's speed over A's */
  }
  qsort(ratio, (size_t)rounds, sizeof ratio[0], cmp);
  const double n = (double)rounds * steps;
  printf("A %s: %.2f tok/s\nB %s: %.2f tok/s\n", argv[1], n / side[0].seconds, argv[2],
         n / side[1].seconds);
  printf("B/A speed: median %.4f, quartiles %.4f-%.4f, range %.4f-%.4f (%d rounds of %d "
         "steps, %d threads)\n",
         ratio[rounds / 2], ratio[rounds / 4], ratio[3 * rounds / 4], ratio[0],
         ratio[rounds - 1], rounds, steps, threads);
  for (int k = 0; k < 2; ++k) {
    kiln_session_destroy(side[k].s);
    kiln_artifact_close(side[k].art);
  }
  free(ratio);
  return 0;
}
