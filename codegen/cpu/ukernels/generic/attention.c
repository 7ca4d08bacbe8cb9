/* kiln micro-kernels, portable C: causal attention over the KV cache (GQA).
 *
 * First every token's k/v rows are stored at its position in the cache (all of them, before
 * any score: a token attends to every cache row up to its own position, as the reference
 * executor does), rotated first when RoPE is fused and rounded to the cache's element type
 * exactly as compiler/eval/OpKernels.cpp roundKvRow rounds. Then per token t and query
 * head h, over j = 0..positions[t]:
 *   s_j = scale * (q[t,h] . K[j,g]);  p_j = e^(s_j - max s) / sum e^(s - max s);
 *   out[t,h] = sum_j p_j V[j,g]
 * with g = kv_head_map[h], or h / (heads / kv_heads) when the map is NULL. Head h uses row
 * h of `scores` (heads * max_ctx floats), so tasks split over heads never share scratch.
 * The exponential is kiln_uk_expf, the normaliser is summed in double. An int8 K row is
 * dotted as integers-in-float and scaled once (q . (k8 * s) = (q . k8) * s up to rounding).
 * Branches on the formats sit outside the loops; with the formats constant after inlining
 * LLVM keeps one path.
 */
#include "common.h"
#include "ukernel_abi.h"

#define LANES 8
#define KILN_UK_ATTENTION_GROUP 8 /* query heads attended together, at most */

typedef struct attention_args_s {
  const float *q;
  int32_t n;
  const int32_t *positions;
  int32_t heads, kv_heads, head_dim;
  float scale;
  const int32_t *kv_head_map;
  uint32_t k_format, v_format;
  const uint8_t *k_cache;
  const float *k_scales;
  const uint8_t *v_cache;
  int32_t max_ctx;
  int32_t rotary_dims, rotate_half;
  const float *cos_table, *sin_table;
  float *scores, *out;
} attention_args_t;

/* Row operations over one head of d values: dots of q with a K row in each format and
 * out += p * V row. An ISA file (x86/attention.c) defines KILN_UK_ATTENTION_ROW_OPS and its
 * own versions, then includes this file for everything else. */
#ifndef KILN_UK_ATTENTION_ROW_OPS
KILN_UK_INLINE float reduce(const float *acc) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

KILN_UK_INLINE float dot_f32(const float *a, const float *b, int32_t d) {
  float acc[LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int32_t i = 0;
  for (; i + LANES <= d; i += LANES)
    for (int32_t j = 0; j < LANES; ++j)
      acc[j] += a[i + j] * b[i + j];
  for (int32_t j = 0; i + j < d; ++j)
    acc[j] += a[i + j] * b[i + j];
  return reduce(acc);
}

KILN_UK_INLINE float dot_f16(const float *a, const uint16_t *b, int32_t d) {
  float acc[LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int32_t i = 0;
  for (; i + LANES <= d; i += LANES)
    for (int32_t j = 0; j < LANES; ++j)
      acc[j] += a[i + j] * kiln_uk_fp16_to_fp32(b[i + j]);
  for (int32_t j = 0; i + j < d; ++j)
    acc[j] += a[i + j] * kiln_uk_fp16_to_fp32(b[i + j]);
  return reduce(acc);
}

KILN_UK_INLINE float dot_i8(const float *a, const int8_t *b, int32_t d) {
  float acc[LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int32_t i = 0;
  for (; i + LANES <= d; i += LANES)
    for (int32_t j = 0; j < LANES; ++j)
      acc[j] += a[i + j] * (float)b[i + j];
  for (int32_t j = 0; i + j < d; ++j)
    acc[j] += a[i + j] * (float)b[i + j];
  return reduce(acc);
}

KILN_UK_INLINE void axpy_f32(float p, const float *v, float *o, int32_t d) {
  for (int32_t i = 0; i < d; ++i)
    o[i] += p * v[i];
}

KILN_UK_INLINE void axpy_f16(float p, const uint16_t *v, float *o, int32_t d) {
  for (int32_t i = 0; i < d; ++i)
    o[i] += p * kiln_uk_fp16_to_fp32(v[i]);
}
#endif

/* dst = x rotated by the angles of position pos (kiln_uk_rope's math on one head). */
KILN_UK_INLINE void rotate_head(const float *x, float *dst, int32_t d, int32_t rotary_dims,
                                int32_t rotate_half, int32_t pos, const float *cos_table,
                                const float *sin_table) {
  const int32_t half = rotary_dims / 2;
  const int32_t step = rotate_half ? 1 : 2;
  const int32_t off = rotate_half ? half : 1;
  const float *c = cos_table + (int64_t)pos * half;
  const float *s = sin_table + (int64_t)pos * half;
  for (int32_t i = 0; i < d; ++i)
    dst[i] = x[i];
  for (int32_t i = 0; i < half; ++i) {
    const float x0 = x[i * step], x1 = x[i * step + off];
    dst[i * step] = x0 * c[i] - x1 * s[i];
    dst[i * step + off] = x0 * s[i] + x1 * c[i];
  }
}

/* Stores one head of d values in `format` at element `idx` of the cache; int8 also writes
 * the head's scale. Same arithmetic as roundKvRow (OpKernels.cpp). */
KILN_UK_INLINE void store_head(uint32_t format, uint8_t *cache, float *scale_out, int64_t idx,
                               const float *x, int32_t d) {
  if (format == KILN_UK_KV_F32) {
    float *dst = (float *)cache + idx;
    for (int32_t i = 0; i < d; ++i)
      dst[i] = x[i];
  } else if (format == KILN_UK_KV_F16) {
    uint16_t *dst = (uint16_t *)cache + idx;
    for (int32_t i = 0; i < d; ++i)
      dst[i] = kiln_uk_fp32_to_fp16(x[i]);
  } else {
    int8_t *dst = (int8_t *)cache + idx;
    float amax = 0.0f;
    for (int32_t i = 0; i < d; ++i) {
      const float ax = kiln_uk_f32_from_bits(kiln_uk_f32_bits(x[i]) & 0x7FFFFFFFu);
      amax = ax > amax ? ax : amax;
    }
    const float s = amax / 127.0f;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    /* round to nearest, ties to even, by adding and removing 1.5 * 2^23 (|y| <= 127.5 so
     * exact; no libm rintf for targets without a rounding instruction). y is volatile so
     * no compiler fuses the multiply into the add (GCC does across statements), which
     * would round differently from the reference; this runs once per stored value. */
    const float magic = 12582912.0f;
    for (int32_t i = 0; i < d; ++i) {
      volatile float y = x[i] * inv;
      float r = y + magic;
      r = r - magic;
      r = r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r);
      dst[i] = (int8_t)r;
    }
    *scale_out = s;
  }
}

/* s[0..len) = softmax(s): p_j = e^(s_j - max s) / total, total the sum of the e^ in double
 * rounded to float. Each loop on its own, so the max (8 partial maxima: exact in any order)
 * and the exponentials vectorise; only the double sum runs in sequence. */
KILN_UK_INLINE void softmax_row(float *s, int32_t len) {
  float m[LANES];
  for (int32_t l = 0; l < LANES; ++l)
    m[l] = -__builtin_inff();
  int32_t j = 0;
  for (; j + LANES <= len; j += LANES)
    for (int32_t l = 0; l < LANES; ++l)
      m[l] = s[j + l] > m[l] ? s[j + l] : m[l];
  float mx = -__builtin_inff();
  for (int32_t l = 0; l < LANES; ++l)
    mx = m[l] > mx ? m[l] : mx;
  for (; j < len; ++j)
    mx = s[j] > mx ? s[j] : mx;
  for (j = 0; j < len; ++j)
    s[j] = kiln_uk_expf(s[j] - mx);
  double sum = 0.0;
  for (j = 0; j < len; ++j)
    sum += (double)s[j];
  const float total = (float)sum;
  for (j = 0; j < len; ++j)
    s[j] = s[j] / total;
}

/* Query head h, which reads KV head g. */
static void attend_head(const attention_args_t *a, int32_t t, int32_t h, int32_t g) {
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d;
  const float *qh = a->q + ((int64_t)t * a->heads + h) * d;
  float qr[KILN_UK_ATTENTION_MAX_HEAD_DIM];
  if (a->rotary_dims > 0) {
    rotate_head(qh, qr, d, a->rotary_dims, a->rotate_half, a->positions[t], a->cos_table,
                a->sin_table);
    qh = qr;
  }
  float *oh = a->out + ((int64_t)t * a->heads + h) * d;
  float *s = a->scores + (int64_t)h * a->max_ctx;
  const int32_t len = a->positions[t] + 1;
  const int64_t koff = (int64_t)g * d;

  if (a->k_format == KILN_UK_KV_F32) {
    const float *kc = (const float *)a->k_cache;
    for (int32_t j = 0; j < len; ++j)
      s[j] = dot_f32(qh, kc + j * kv_width + koff, d) * a->scale;
  } else if (a->k_format == KILN_UK_KV_F16) {
    const uint16_t *kc = (const uint16_t *)a->k_cache;
    for (int32_t j = 0; j < len; ++j)
      s[j] = dot_f16(qh, kc + j * kv_width + koff, d) * a->scale;
  } else {
    const int8_t *kc = (const int8_t *)a->k_cache;
    for (int32_t j = 0; j < len; ++j)
      s[j] = dot_i8(qh, kc + j * kv_width + koff, d) * a->k_scales[(int64_t)j * a->kv_heads + g] *
             a->scale;
  }
  softmax_row(s, len);
  for (int32_t i = 0; i < d; ++i)
    oh[i] = 0.0f;
  if (a->v_format == KILN_UK_KV_F32) {
    const float *vc = (const float *)a->v_cache;
    for (int32_t j = 0; j < len; ++j)
      axpy_f32(s[j], vc + j * kv_width + koff, oh, d);
  } else {
    const uint16_t *vc = (const uint16_t *)a->v_cache;
    for (int32_t j = 0; j < len; ++j)
      axpy_f16(s[j], vc + j * kv_width + koff, oh, d);
  }
}

#if !defined(KILN_UK_ATTENTION_GROUP_OPS) && !defined(KILN_UK_ATTENTION_ROW_OPS)
/* The portable group ops (Hexagon's attention, and the generic builds): the generic row
 * ops' lanes and reduction, two heads at a time whatever N (more accumulators than a
 * scalar core's registers hold would only spill), each K/V element converted once per
 * pair. MIN_GROUP = GROUP: attend_heads instantiates one width. */
#define KILN_UK_ATTENTION_GROUP_OPS 1
#define KILN_UK_ATTENTION_MIN_GROUP KILN_UK_ATTENTION_GROUP

KILN_UK_INLINE float kv_elem(uint32_t format, const uint8_t *cache, int64_t idx) {
  if (format == KILN_UK_KV_F32)
    return ((const float *)cache)[idx];
  if (format == KILN_UK_KV_F16)
    return kiln_uk_fp16_to_fp32(((const uint16_t *)cache)[idx]);
  return (float)((const int8_t *)cache)[idx];
}

KILN_UK_INLINE void group_scores(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *q, float *const *s, int32_t nh,
                                 int32_t len, int32_t g) {
  (void)N;
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d, koff = (int64_t)g * d;
  for (int32_t i0 = 0; i0 < nh; i0 += 2)
    for (int32_t j = 0; j < len; ++j) {
      float acc[2][LANES] = {{0.0f}};
      for (int32_t c = 0; c < d; c += LANES) {
        float k[LANES];
        for (int32_t l = 0; l < LANES; ++l)
          k[l] = kv_elem(format, a->k_cache, j * kv_width + koff + c + l);
        for (int32_t i = 0; i < 2; ++i)
          for (int32_t l = 0; l < LANES; ++l)
            acc[i][l] += q[i0 + i][c + l] * k[l];
      }
      const float ks = format == KILN_UK_KV_I8 ? a->k_scales[(int64_t)j * a->kv_heads + g] : 1.0f;
      for (int32_t i = 0; i < 2 && i0 + i < nh; ++i)
        s[i0 + i][j] = format == KILN_UK_KV_I8 ? reduce(acc[i]) * ks * a->scale
                                               : reduce(acc[i]) * a->scale;
    }
}

KILN_UK_INLINE void group_values(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *p, float *const *out, int32_t nh,
                                 int32_t len, int32_t g) {
  (void)N;
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d, koff = (int64_t)g * d;
  for (int32_t i0 = 0; i0 < nh; i0 += 2)
    for (int32_t c = 0; c < d; c += LANES) {
      float acc[2][LANES] = {{0.0f}};
      for (int32_t j = 0; j < len; ++j) {
        float v[LANES];
        for (int32_t l = 0; l < LANES; ++l)
          v[l] = kv_elem(format, a->v_cache, j * kv_width + koff + c + l);
        for (int32_t i = 0; i < 2; ++i)
          for (int32_t l = 0; l < LANES; ++l)
            acc[i][l] += p[i0 + i][j] * v[l];
      }
      for (int32_t i = 0; i < 2 && i0 + i < nh; ++i)
        for (int32_t l = 0; l < LANES; ++l)
          out[i0 + i][c + l] = acc[i][l];
    }
}
#endif

/* Query heads hs[0..nh) (nh <= KILN_UK_ATTENTION_GROUP), all reading KV head g, for token
 * t. An ISA file that reads each K and V row once for the whole group (x86/attention.c,
 * neon/attention.c) defines KILN_UK_ATTENTION_GROUP_OPS and KILN_UK_ATTENTION_MIN_GROUP
 * (2 or 4: the fewest heads it runs at once, so that enough FMA chains are in flight)
 * before including this file, and group_scores / group_values (declared here) after it;
 * without either macro the portable ops above serve. They compute the scaled scores of
 * N = 2, 4 or 8 heads (a constant at each call; heads past nh repeat head 0 and are
 * dropped) into s[i], and out[i] = sum_j s[i][j] V[j]. Each head's arithmetic must stay
 * attend_head's, operation for operation, so a group gives the same bits as its heads one
 * by one. */
#ifdef KILN_UK_ATTENTION_GROUP_OPS
KILN_UK_INLINE void group_scores(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *q, float *const *s, int32_t nh,
                                 int32_t len, int32_t g);
KILN_UK_INLINE void group_values(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *p, float *const *out, int32_t nh,
                                 int32_t len, int32_t g);

/* One group through scores, softmax and values with N heads' chains. */
KILN_UK_INLINE void group_attend(const attention_args_t *a, int32_t N, const float *const *q,
                                 float **s, float *const *out, int32_t nh, int32_t len,
                                 int32_t g) {
  if (a->k_format == KILN_UK_KV_F32)
    group_scores(a, KILN_UK_KV_F32, N, q, s, nh, len, g);
  else if (a->k_format == KILN_UK_KV_F16)
    group_scores(a, KILN_UK_KV_F16, N, q, s, nh, len, g);
  else
    group_scores(a, KILN_UK_KV_I8, N, q, s, nh, len, g);
  for (int32_t i = 0; i < nh; ++i)
    softmax_row(s[i], len);
  for (int32_t i = nh; i < KILN_UK_ATTENTION_GROUP; ++i)
    s[i] = s[0];
  if (a->v_format == KILN_UK_KV_F32)
    group_values(a, KILN_UK_KV_F32, N, (const float *const *)s, out, nh, len, g);
  else
    group_values(a, KILN_UK_KV_F16, N, (const float *const *)s, out, nh, len, g);
}

static void attend_heads(const attention_args_t *a, int32_t t, int32_t g, const int32_t *hs,
                         int32_t nh) {
  const int32_t d = a->head_dim;
  if (nh == 1 || d % LANES != 0) {
    for (int32_t i = 0; i < nh; ++i)
      attend_head(a, t, hs[i], g);
    return;
  }
  float qr[KILN_UK_ATTENTION_GROUP][KILN_UK_ATTENTION_MAX_HEAD_DIM];
  const float *q[KILN_UK_ATTENTION_GROUP];
  float *s[KILN_UK_ATTENTION_GROUP], *out[KILN_UK_ATTENTION_GROUP];
  for (int32_t i = 0; i < KILN_UK_ATTENTION_GROUP; ++i) {
    const int32_t h = hs[i < nh ? i : 0];
    q[i] = a->q + ((int64_t)t * a->heads + h) * d;
    if (a->rotary_dims > 0 && i < nh) {
      rotate_head(q[i], qr[i], d, a->rotary_dims, a->rotate_half, a->positions[t], a->cos_table,
                  a->sin_table);
      q[i] = qr[i];
    } else if (a->rotary_dims > 0) {
      q[i] = q[0];
    }
    s[i] = a->scores + (int64_t)h * a->max_ctx;
    out[i] = a->out + ((int64_t)t * a->heads + h) * d;
  }
  const int32_t len = a->positions[t] + 1;
  if (KILN_UK_ATTENTION_MIN_GROUP == KILN_UK_ATTENTION_GROUP)
    group_attend(a, KILN_UK_ATTENTION_GROUP, q, s, out, nh, len, g);
  else if (nh <= 2 && KILN_UK_ATTENTION_MIN_GROUP <= 2)
    group_attend(a, 2, q, s, out, nh, len, g);
  else if (nh <= 4)
    group_attend(a, 4, q, s, out, nh, len, g);
  else
    group_attend(a, 8, q, s, out, nh, len, g);
}
#else
static void attend_heads(const attention_args_t *a, int32_t t, int32_t g, const int32_t *hs,
                         int32_t nh) {
  for (int32_t i = 0; i < nh; ++i)
    attend_head(a, t, hs[i], g);
}
#endif

/* The task's heads [h0, h1) by KV head, up to KILN_UK_ATTENTION_GROUP at a time: with GQA
 * the query heads of one KV head share every cache row they read. Query head h reads KV
 * head kv_head_map[h], or h / (heads / kv_heads) without a map: the heads [g * per,
 * (g + 1) * per). One division per task: Hexagon has no divider, and a division per (token,
 * KV head, head) was ~10% of a stories260K token there (docs/targets.md). */
static void attention_task(void *arg, int32_t task, int32_t n_tasks) {
  const attention_args_t *a = (const attention_args_t *)arg;
  int64_t h0, h1;
  kiln_uk_task_range(a->heads, task, n_tasks, &h0, &h1);
  const int32_t per = a->kv_head_map ? 0 : a->heads / a->kv_heads;
  int32_t hs[KILN_UK_ATTENTION_GROUP];
  for (int32_t t = 0; t < a->n; ++t)
    for (int32_t g = 0; g < a->kv_heads; ++g) {
      int32_t nh = 0;
      const int32_t lo = a->kv_head_map ? (int32_t)h0 : KILN_UK_MAX((int32_t)h0, g * per);
      const int32_t hi = a->kv_head_map ? (int32_t)h1 : KILN_UK_MIN((int32_t)h1, (g + 1) * per);
      for (int32_t h = lo; h < hi; ++h) {
        if (a->kv_head_map && a->kv_head_map[h] != g)
          continue;
        hs[nh++] = h;
        if (nh == KILN_UK_ATTENTION_GROUP) {
          attend_heads(a, t, g, hs, nh);
          nh = 0;
        }
      }
      if (nh > 0)
        attend_heads(a, t, g, hs, nh);
    }
}

void kiln_uk_attention(const kiln_exec_ctx_t *ctx, const float *q, const float *k,
                       const float *v, int32_t n, const int32_t *positions, int32_t heads,
                       int32_t kv_heads, int32_t head_dim, float scale,
                       const int32_t *kv_head_map, uint32_t k_format, uint32_t v_format,
                       uint8_t *k_cache, float *k_scales, uint8_t *v_cache, int32_t max_ctx,
                       int32_t rotary_dims, int32_t rotate_half, const float *cos_table,
                       const float *sin_table, float *scores, float *out) {
  const int64_t kv_width = (int64_t)kv_heads * head_dim;
  int64_t work = 0;
  float kr[KILN_UK_ATTENTION_MAX_HEAD_DIM];
  for (int32_t t = 0; t < n; ++t) {
    const int32_t pos = positions[t];
    for (int32_t g = 0; g < kv_heads; ++g) {
      const int64_t src = t * kv_width + (int64_t)g * head_dim;
      const int64_t dst = (int64_t)pos * kv_width + (int64_t)g * head_dim;
      const float *kh = k + src;
      if (rotary_dims > 0) {
        rotate_head(kh, kr, head_dim, rotary_dims, rotate_half, pos, cos_table, sin_table);
        kh = kr;
      }
      store_head(k_format, k_cache, k_scales ? k_scales + ((int64_t)pos * kv_heads + g) : 0, dst,
                 kh, head_dim);
      store_head(v_format, v_cache, 0, dst, v + src, head_dim);
    }
    work += 2 * ((int64_t)pos + 1) * heads * head_dim;
  }
  attention_args_t a = {q,         n,           positions, heads,    kv_heads,    head_dim,
                        scale,     kv_head_map, k_format,  v_format, k_cache,     k_scales,
                        v_cache,   max_ctx,     rotary_dims, rotate_half, cos_table, sin_table,
                        scores,    out};
  const int32_t n_tasks =
      kiln_uk_task_count(ctx, work, KILN_UK_ATTENTION_PARALLEL_MIN_WORK, heads, 1);
  kiln_uk_parallel(ctx, attention_task, &a, n_tasks);
}
