/* kiln-run ppl: perplexity exactly as llama.cpp's perplexity tool (and `kiln ppl`) computes
 * it: tokenize the whole file with BOS, cut floor(n / C) chunks of C tokens, replace the
 * first token of each chunk by BOS, run each chunk on a fresh cache, and score the logits
 * at positions C/2 .. C-2 against the next token with a log-softmax in double.
 * PPL = exp(mean NLL); the +/- is the standard error propagated to PPL. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln-run.h"

typedef struct score_s {
  double nll, nll2;
  size_t n, hits;
} score_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Adds -log softmax(row)[next] to the score. */
static void score_row(const float *row, uint32_t vocab, int32_t next, score_t *sc) {
  double mx = row[0];
  uint32_t top = 0;
  for (uint32_t i = 1; i < vocab; ++i) {
    if (row[i] > row[top])
      top = i;
    if ((double)row[i] > mx)
      mx = row[i];
  }
  double sum = 0;
  for (uint32_t i = 0; i < vocab; ++i)
    sum += exp((double)row[i] - mx);
  const double l = -((double)row[next] - mx - log(sum));
  sc->nll += l;
  sc->nll2 += l * l;
  sc->n += 1;
  sc->hits += top == (uint32_t)next;
}

static int read_file(const char *path, char **out, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return run_fail("cannot read text file '%s'", path);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap) {
      char *bigger = realloc(buf, cap *= 2);
      if (!bigger)
        free(buf);
      buf = bigger;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    return run_fail("cannot read text file '%s'", path);
  }
  *out = buf;
  *out_len = len;
  return 0;
}

/* Runs one chunk (tokens[0] already BOS) and scores positions first..ctx-2. */
static int run_chunk(kiln_session_t *s, const int32_t *chunk, uint32_t ctx, uint32_t max_batch,
                     uint32_t vocab, score_t *sc) {
  const uint32_t first = ctx / 2;
  kiln_error_t err;
  kiln_session_reset(s);
  for (uint32_t done = 0; done < ctx;) {
    uint32_t b = ctx - done < max_batch ? ctx - done : max_batch;
    if (kiln_session_prefill(s, chunk + done, b, &err) != KILN_STATUS_OK)
      return run_fail("%s", err.message);
    uint32_t rows, pos0;
    const float *logits = kiln_session_batch_logits(s, &rows, &pos0);
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t j = pos0 + r;
      if (j >= first && j + 1 < ctx)
        score_row(logits + (size_t)r * vocab, vocab, chunk[j + 1], sc);
    }
    done += b;
  }
  return 0;
}

int run_ppl(const run_options_t *o) {
  char *text = NULL;
  size_t len = 0;
  if (read_file(o->text, &text, &len))
    return 1;
  kiln_artifact_t *a;
  kiln_session_t *s;
  if (run_open(o, &a, &s)) {
    free(text);
    return 1;
  }
  kiln_artifact_info_t info;
  kiln_artifact_info(a, &info);
  const uint32_t ctx = o->ctx ? o->ctx : info.max_ctx;
  int32_t *tokens = NULL;
  size_t n = 0;
  int rc = 0;
  if (ctx > info.max_ctx)
    rc = run_fail("--ctx %u exceeds the artifact's context of %u (compile with --ctx %u)", ctx,
                  info.max_ctx, ctx);
  else if (ctx < 4)
    rc = run_fail("context %u is too small to score (need at least 4)", ctx);
  if (!rc)
    rc = run_tokenize(a, text, len, 1, &tokens, &n);
  size_t chunks = n / ctx;
  if (o->chunks && chunks > o->chunks)
    chunks = o->chunks;
  if (!rc && chunks == 0)
    rc = run_fail("the text has %zu tokens, fewer than one chunk of %u", n, ctx);
  if (!rc)
    fprintf(stderr, "%s: %zu tokens, %zu chunks of %u\n", o->text, n, n / ctx, ctx);
  score_t sc = {0, 0, 0, 0};
  const double t0 = now_s();
  for (size_t c = 0; !rc && c < chunks; ++c) {
    int32_t *chunk = tokens + c * ctx;
    if (info.bos_id >= 0)
      chunk[0] = info.bos_id;
    rc = run_chunk(s, chunk, ctx,
                   o->batch && o->batch < info.max_batch ? o->batch : info.max_batch,
                   info.vocab_size, &sc);
    if (!rc)
      fprintf(stderr, "[%zu]%.4f ", c + 1, exp(sc.nll / (double)sc.n));
  }
  if (!rc) {
    fprintf(stderr, "\n");
    const double mean = sc.nll / (double)sc.n, ppl = exp(mean);
    const double var = sc.nll2 / (double)sc.n - mean * mean;
    const double se = sc.n > 1 ? ppl * sqrt((var > 0 ? var : 0) / (double)(sc.n - 1)) : 0;
    printf("chunks: %zu (ctx %u), scored tokens: %zu, %.2f s\n", chunks, ctx, sc.n,
           now_s() - t0);
    printf("PPL = %.4f +/- %.4f\n", ppl, se);
    printf("top-1 accuracy = %.4f\n", (double)sc.hits / (double)sc.n);
  }
  free(tokens);
  free(text);
  run_close(a, s);
  return rc;
}
