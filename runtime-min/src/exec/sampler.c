/* Next-token sampling: greedy (argmax, lowest id on ties), or temperature with top-k and
 * top-p cuts and a seeded xoshiro256** generator. All buffers (candidate ids and their
 * probabilities, vocab_size each) are allocated at create; sampling never allocates. */
#include <math.h>
#include <string.h>

#include "../platform/error.h"
#include "kiln/kiln.h"

struct kiln_sampler_s {
  kiln_allocator_t alloc;
  uint32_t vocab;
  kiln_sampler_params_t params;
  uint64_t rng[4];
  int32_t *ids;   /* candidates, best first */
  double *probs;
  size_t bytes;   /* of the ids + probs block */
};

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(uint64_t s[4]) { /* xoshiro256** */
  const uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

kiln_sampler_params_t kiln_sampler_params_default(void) {
  kiln_sampler_params_t p = {0.0f, 0, 1.0f, 0};
  return p;
}

kiln_status_t kiln_sampler_set_params(kiln_sampler_t *s, const kiln_sampler_params_t *params,
                                      kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!s || !params)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "sampler or params is NULL");
  if (!isfinite(params->temperature) || params->top_k < 0 || !(params->top_p > 0.0f) ||
      !(params->top_p <= 1.0f))
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "sampler: temperature %g must be finite, top_k %d >= 0 and top_p %g "
                          "in (0, 1]", (double)params->temperature, (int)params->top_k,
                          (double)params->top_p);
  s->params = *params;
  uint64_t x = params->seed;
  for (int i = 0; i < 4; ++i)
    s->rng[i] = splitmix64(&x);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_sampler_create(uint32_t vocab_size, const kiln_sampler_params_t *params,
                                  const kiln_allocator_t *allocator, kiln_sampler_t **out_sampler,
                                  kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!out_sampler)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "out_sampler is NULL");
  *out_sampler = NULL;
  if (vocab_size < 1 || vocab_size > (1u << 24))
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "sampler: vocab_size %u is outside 1..2^24", vocab_size);
  kiln_allocator_t alloc;
  KILN_RETURN_IF_ERROR(kiln_allocator_resolve(allocator, &alloc, out_error));
  kiln_sampler_params_t def = kiln_sampler_params_default();
  kiln_sampler_t tmp;
  memset(&tmp, 0, sizeof tmp);
  KILN_RETURN_IF_ERROR(kiln_sampler_set_params(&tmp, params ? params : &def, out_error));
  kiln_sampler_t *s = kiln_mem_alloc(&alloc, sizeof *s, 64, "the sampler", out_error);
  if (!s)
    return out_error ? out_error->status : KILN_STATUS_OUT_OF_MEMORY;
  *s = tmp;
  s->alloc = alloc;
  s->vocab = vocab_size;
  s->bytes = (size_t)vocab_size * (sizeof(double) + sizeof(int32_t));
  uint8_t *block = kiln_mem_alloc(&alloc, s->bytes, 64, "sampler buffers", out_error);
  if (!block) {
    kiln_mem_free(&alloc, s, sizeof *s);
    return out_error ? out_error->status : KILN_STATUS_OUT_OF_MEMORY;
  }
  s->probs = (double *)(void *)block;
  s->ids = (int32_t *)(void *)(block + (size_t)vocab_size * sizeof(double));
  *out_sampler = s;
  return KILN_STATUS_OK;
}

void kiln_sampler_destroy(kiln_sampler_t *s) {
  if (!s)
    return;
  kiln_allocator_t alloc = s->alloc;
  kiln_mem_free(&alloc, s->probs, s->bytes);
  kiln_mem_free(&alloc, s, sizeof *s);
}

/* NaN ranks below every number. */
static float key(const float *l, int32_t id) { return isnan(l[id]) ? -INFINITY : l[id]; }

/* a ranks before b: larger logit, then lower id. */
static int better(const float *l, int32_t a, int32_t b) {
  const float x = key(l, a), y = key(l, b);
  return x > y || (x == y && a < b);
}

/* Min-heap on rank (the root is the worst kept candidate). */
static void sift_down(const float *l, int32_t *h, size_t n, size_t i) {
  for (;;) {
    size_t w = i, c = 2 * i + 1;
    if (c < n && better(l, h[w], h[c]))
      w = c;
    if (c + 1 < n && better(l, h[w], h[c + 1]))
      w = c + 1;
    if (w == i)
      return;
    int32_t t = h[i];
    h[i] = h[w];
    h[w] = t;
    i = w;
  }
}

/* The k best ids, best first, into ids[0..k). O(vocab log k), no allocation. */
static void top_k(const float *l, uint32_t vocab, size_t k, int32_t *ids) {
  size_t n = 0;
  for (uint32_t id = 0; id < vocab; ++id) {
    if (n < k) { /* push, then restore the heap bottom-up */
      size_t i = n++;
      ids[i] = (int32_t)id;
      while (i > 0 && better(l, ids[(i - 1) / 2], ids[i])) {
        int32_t t = ids[i];
        ids[i] = ids[(i - 1) / 2];
        ids[(i - 1) / 2] = t;
        i = (i - 1) / 2;
      }
    } else if (better(l, (int32_t)id, ids[0])) {
      ids[0] = (int32_t)id;
      sift_down(l, ids, n, 0);
    }
  }
  for (size_t end = n; end > 1; --end) { /* pop the worst to the back: best ends first */
    int32_t t = ids[0];
    ids[0] = ids[end - 1];
    ids[end - 1] = t;
    sift_down(l, ids, end - 1, 0);
  }
}

kiln_status_t kiln_sampler_sample(kiln_sampler_t *s, const float *logits, int32_t *out_token,
                                  kiln_error_t *out_error) {
  if (!s || !logits || !out_token)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "sample: NULL sampler, logits or output");
  kiln_error_clear(out_error);
  const kiln_sampler_params_t *p = &s->params;
  if (p->temperature <= 0.0f) {
    int32_t best = 0;
    for (uint32_t i = 1; i < s->vocab; ++i)
      if (better(logits, (int32_t)i, best))
        best = (int32_t)i;
    *out_token = best;
    return KILN_STATUS_OK;
  }
  const size_t k = p->top_k > 0 && (uint32_t)p->top_k < s->vocab ? (size_t)p->top_k : s->vocab;
  top_k(logits, s->vocab, k, s->ids);
  const double top = key(logits, s->ids[0]);
  if (!isfinite(top)) { /* nothing to weigh: every logit is -inf, +inf at the top, or NaN */
    *out_token = s->ids[0];
    return KILN_STATUS_OK;
  }
  double sum = 0;
  for (size_t i = 0; i < k; ++i)
    sum += s->probs[i] = exp(((double)key(logits, s->ids[i]) - top) / p->temperature);
  size_t keep = k;
  double mass = 0;
  for (size_t i = 0; i < k; ++i) {
    mass += s->probs[i] / sum;
    if (mass >= p->top_p) {
      keep = i + 1;
      break;
    }
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i)
    kept += s->probs[i];
  const double u = (double)(next_u64(s->rng) >> 11) * 0x1.0p-53 * kept;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += s->probs[i];
    if (u < acc) {
      *out_token = s->ids[i];
      return KILN_STATUS_OK;
    }
  }
  *out_token = s->ids[keep - 1];
  return KILN_STATUS_OK;
}
