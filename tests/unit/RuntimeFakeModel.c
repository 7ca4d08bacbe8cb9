/* A stand-in for generated model code, built as a shared object and placed in the code
 * section of test artifacts (RuntimeFakeArtifact.h). It keeps to the generated code's
 * rules (kiln/abi.h): no allocation, no libc, every buffer from the runtime.
 *
 * weights: uint32 {magic 'FAKE', vocab, max_ctx, probe} at offset 0; probe (0 in the
 *          plain fake artifact) is added to logit 0 of every row, so a test sees which
 *          weights a session reads (modules, RuntimeModuleTest.cpp).
 * kv:      int32 per position: token + 1, 0 = never written. A batch whose earlier
 *          positions were never written is rejected (-4), so tests see when the runtime
 *          skips or repeats positions.
 * logits:  row i = 10 at (tokens[i] + 1) % vocab, 0 elsewhere, written by parallel_for
 *          tasks (one row each); with ctx->last_logits_only the last row only (the
 *          others keep what was there, as generated code leaves them). */
#include <stdint.h>

#include "kiln/abi.h"

#define FAKE_MAGIC 0x454B4146u /* "FAKE" */

typedef struct rows_s {
  const int32_t *tokens;
  float *logits;
  uint32_t vocab;
  float probe;
} rows_t;

static void row_task(void *arg, int32_t task, int32_t n_tasks) {
  const rows_t *r = arg;
  (void)n_tasks;
  float *row = r->logits + (uint64_t)task * r->vocab;
  for (uint32_t v = 0; v < r->vocab; ++v)
    row[v] = 0.0f;
  row[((uint32_t)r->tokens[task] + 1u) % r->vocab] = 10.0f;
  row[0] += r->probe;
}

__attribute__((visibility("default"))) int32_t
kiln_model_forward(const kiln_exec_ctx_t *ctx, const int32_t *tokens, const int32_t *positions,
                   int32_t n_tokens, float *logits) {
  if (!ctx || ctx->abi_version != KILN_ABI_VERSION || !ctx->parallel_for || !ctx->kv ||
      !ctx->scratch || n_tokens < 1)
    return -1;
  const uint32_t *w = (const uint32_t *)ctx->weights;
  if (w[0] != FAKE_MAGIC)
    return -1;
  const uint32_t vocab = w[1], max_ctx = w[2];
  int32_t *kv = (int32_t *)ctx->kv;
  for (int32_t i = 0; i < n_tokens; ++i) {
    if (positions[i] < 0 || (uint32_t)positions[i] >= max_ctx)
      return -2;
    if (tokens[i] < 0 || (uint32_t)tokens[i] >= vocab)
      return -3;
  }
  for (int32_t i = 0; i < n_tokens; ++i) {
    for (int32_t p = 0; p < positions[i]; ++p)
      if (kv[p] == 0)
        return -4;
    kv[positions[i]] = tokens[i] + 1;
  }
  const int32_t first = ctx->last_logits_only ? n_tokens - 1 : 0;
  rows_t r = {tokens + first, logits + (uint64_t)first * vocab, vocab, (float)w[3]};
  ctx->parallel_for(ctx->pool, row_task, &r, n_tokens - first);
  return 0;
}
