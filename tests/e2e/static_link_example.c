/* Links `kiln compile --emit=obj` output statically (no runtime-min, no artifact file: the
 * object embeds the weights) and runs the model directly through the ABI of kiln/abi.h, the
 * way a freestanding target (a DSP, an emulator) will. Prints the top logit after a prompt
 * and a few greedy tokens. Build: cc -I runtime-min/include -I DIR this.c DIR/model.o */
#include <stdio.h>
#include <stdlib.h>

#include "model.h"

static void serial_for(void *pool, kiln_task_fn_t fn, void *arg, int32_t n_tasks) {
  (void)pool;
  for (int32_t i = 0; i < n_tasks; ++i)
    fn(arg, i, n_tasks);
}

static int32_t argmax(const float *x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (x[i] > x[best])
      best = i;
  return best;
}

int main(void) {
  void *scratch = aligned_alloc(64, (KILN_MODEL_SCRATCH_BYTES + 63) / 64 * 64);
  void *kv = aligned_alloc(64, (KILN_MODEL_KV_BYTES + 63) / 64 * 64);
  float *logits = malloc(sizeof(float) * 5 * KILN_MODEL_VOCAB);
  if (!scratch || !kv || !logits)
    return 1;
  kiln_exec_ctx_t ctx = {KILN_ABI_VERSION, 1, kiln_model_weights, scratch, kv, serial_for, NULL, 0};
  int32_t tokens[5] = {1, 403, 407, 261, 378}; /* "Once upon a time" with BOS */
  int32_t positions[5] = {0, 1, 2, 3, 4};
  if (kiln_model_forward(&ctx, tokens, positions, 5, logits) != 0)
    return 2;
  const float *last = logits + 4 * KILN_MODEL_VOCAB;
  int32_t next = argmax(last, KILN_MODEL_VOCAB);
  printf("top %d %.4f\n", next, last[next]);
  printf("greedy");
  for (int32_t pos = 5; pos < 13; ++pos) {
    printf(" %d", next);
    if (kiln_model_forward(&ctx, &next, &pos, 1, logits) != 0)
      return 3;
    next = argmax(logits, KILN_MODEL_VOCAB);
  }
  printf("\n");
  /* Out-of-range input is refused, not executed. */
  int32_t bad = KILN_MODEL_VOCAB;
  printf("bad token -> %d\n", kiln_model_forward(&ctx, &bad, positions, 1, logits));
  free(scratch);
  free(kv);
  free(logits);
  return 0;
}
