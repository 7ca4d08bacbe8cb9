/* kiln micro-kernels, portable C: causal attention over the KV cache (GQA).
 *
 * First every token's k/v rows are stored at its position in the cache (all of them, before
 * any score: a token attends to every cache row up to its own position, as the reference
 * executor does). Then per token t and query head h, over j = 0..positions[t]:
 *   s_j = scale * (q[t,h] . K[j,g]);  p_j = e^(s_j - max s) / sum e^(s - max s);
 *   out[t,h] = sum_j p_j V[j,g]
 * with g = kv_head_map[h], or h / (heads / kv_heads) when the map is NULL. Head h uses row
 * h of `scores` (heads * max_ctx floats), so tasks split over heads never share scratch.
 * The exponential is kiln_uk_expf, the normaliser is summed in double.
 */
#include "common.h"
#include "ukernel_abi.h"

#define LANES 8

typedef struct attention_args_s {
  const float *q;
  int32_t n;
  const int32_t *positions;
  int32_t heads, kv_heads, head_dim;
  float scale;
  const int32_t *kv_head_map;
  const float *k_cache, *v_cache;
  int32_t max_ctx;
  float *scores, *out;
} attention_args_t;

KILN_UK_INLINE float dot(const float *a, const float *b, int32_t d) {
  float acc[LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int32_t i = 0;
  for (; i + LANES <= d; i += LANES)
    for (int32_t j = 0; j < LANES; ++j)
      acc[j] += a[i + j] * b[i + j];
  for (int32_t j = 0; i + j < d; ++j)
    acc[j] += a[i + j] * b[i + j];
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

static void attend_head(const attention_args_t *a, int32_t t, int32_t h) {
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d;
  const int32_t g = a->kv_head_map ? a->kv_head_map[h] : h / (a->heads / a->kv_heads);
  const float *qh = a->q + ((int64_t)t * a->heads + h) * d;
  float *oh = a->out + ((int64_t)t * a->heads + h) * d;
  float *s = a->scores + (int64_t)h * a->max_ctx;
  const int32_t len = a->positions[t] + 1;

  float mx = -__builtin_inff();
  for (int32_t j = 0; j < len; ++j) {
    s[j] = dot(qh, a->k_cache + j * kv_width + (int64_t)g * d, d) * a->scale;
    mx = s[j] > mx ? s[j] : mx;
  }
  double sum = 0.0;
  for (int32_t j = 0; j < len; ++j) {
    s[j] = kiln_uk_expf(s[j] - mx);
    sum += (double)s[j];
  }
  const float total = (float)sum;
  for (int32_t i = 0; i < d; ++i)
    oh[i] = 0.0f;
  for (int32_t j = 0; j < len; ++j) {
    const float p = s[j] / total;
    const float *vj = a->v_cache + j * kv_width + (int64_t)g * d;
    for (int32_t i = 0; i < d; ++i)
      oh[i] += p * vj[i];
  }
}

static void attention_task(void *arg, int32_t task, int32_t n_tasks) {
  const attention_args_t *a = (const attention_args_t *)arg;
  int64_t h0, h1;
  kiln_uk_task_range(a->heads, task, n_tasks, &h0, &h1);
  for (int32_t t = 0; t < a->n; ++t)
    for (int32_t h = (int32_t)h0; h < (int32_t)h1; ++h)
      attend_head(a, t, h);
}

void kiln_uk_attention(const kiln_exec_ctx_t *ctx, const float *q, const float *k,
                       const float *v, int32_t n, const int32_t *positions, int32_t heads,
                       int32_t kv_heads, int32_t head_dim, float scale,
                       const int32_t *kv_head_map, float *k_cache, float *v_cache,
                       int32_t max_ctx, float *scores, float *out) {
  const int64_t kv_width = (int64_t)kv_heads * head_dim;
  int64_t work = 0;
  for (int32_t t = 0; t < n; ++t) {
    const int64_t row = (int64_t)positions[t] * kv_width;
    const float *kt = k + t * kv_width, *vt = v + t * kv_width;
    for (int64_t i = 0; i < kv_width; ++i) {
      k_cache[row + i] = kt[i];
      v_cache[row + i] = vt[i];
    }
    work += 2 * ((int64_t)positions[t] + 1) * heads * head_dim;
  }
  attention_args_t a = {q,         n,           positions, heads,  kv_heads, head_dim, scale,
                        kv_head_map, k_cache,   v_cache,   max_ctx, scores,  out};
  const int32_t n_tasks =
      kiln_uk_task_count(ctx, work, KILN_UK_ATTENTION_PARALLEL_MIN_WORK, heads);
  kiln_uk_parallel(ctx, attention_task, &a, n_tasks);
}
