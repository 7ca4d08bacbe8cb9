/* kiln micro-kernels, x86 (AVX2 + FMA + F16C): attention's row operations over the KV
 * cache in 8-float vectors. Decode at long context reads the whole cache once per token
 * and head, so these loops are the kernel; the generic C converts f16 and int8 one
 * element at a time (stories260K at 1920 positions decoded 2.6x slower with a k=int8,v=f16
 * cache than with f32 before this file). f16 rows load through vcvtph2ps, int8 rows through
 * vpmovsxbd + vcvtdq2ps. Results equal the generic kernel's up to summation order. Storing
 * (rounding to f16/int8, RoPE) and the softmax are the generic code, included below.
 *
 * With GQA, attend_heads runs up to 8 query heads of one KV head together: each K and V
 * row is loaded and converted once for all of them, and the heads' dot products are
 * independent FMA chains (one head's 8-deep chain waited on FMA latency); groups of 2-4
 * run 4 chains, so stories260K's pairs do not pay for 8. The arithmetic
 * per head is attend_head's with these row ops, operation for operation (the 8-to-1 lane
 * reduction in hsum8's order), so results are the same bits as head by head. One
 * TinyLlama-shaped layer (32 heads, 4 KV heads, f16 cache), one thread: 36.2 -> 14.6 us at
 * position 80, 1015.6 -> 386.8 us at 2000 (tests/bench/attention_bench.c).
 */
#include <immintrin.h>

#include "common.h"

#define KILN_UK_ATTENTION_ROW_OPS 1
#define KILN_UK_ATTENTION_GROUP_OPS 1
#define KILN_UK_ATTENTION_MIN_GROUP 4 /* one 8-lane chain per head */

KILN_UK_INLINE float hsum8(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

KILN_UK_INLINE __m256 load_f16x8(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

KILN_UK_INLINE __m256 load_i8x8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

KILN_UK_INLINE float dot_f32(const float *a, const float *b, int32_t d) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float r = hsum8(acc);
  for (; i < d; ++i)
    r += a[i] * b[i];
  return r;
}

KILN_UK_INLINE float dot_f16(const float *a, const uint16_t *b, int32_t d) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load_f16x8(b + i), acc);
  float r = hsum8(acc);
  for (; i < d; ++i)
    r += a[i] * kiln_uk_fp16_to_fp32(b[i]);
  return r;
}

KILN_UK_INLINE float dot_i8(const float *a, const int8_t *b, int32_t d) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load_i8x8(b + i), acc);
  float r = hsum8(acc);
  for (; i < d; ++i)
    r += a[i] * (float)b[i];
  return r;
}

KILN_UK_INLINE void axpy_f32(float p, const float *v, float *o, int32_t d) {
  const __m256 pv = _mm256_set1_ps(p);
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    _mm256_storeu_ps(o + i, _mm256_fmadd_ps(pv, _mm256_loadu_ps(v + i), _mm256_loadu_ps(o + i)));
  for (; i < d; ++i)
    o[i] += p * v[i];
}

KILN_UK_INLINE void axpy_f16(float p, const uint16_t *v, float *o, int32_t d) {
  const __m256 pv = _mm256_set1_ps(p);
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    _mm256_storeu_ps(o + i, _mm256_fmadd_ps(pv, load_f16x8(v + i), _mm256_loadu_ps(o + i)));
  for (; i < d; ++i)
    o[i] += p * kiln_uk_fp16_to_fp32(v[i]);
}

#include "generic/attention.c"

/* Sums each of v[0..8) across its lanes in hsum8's order ((a0+a4)+(a2+a6)) + ((a1+a5)+
 * (a3+a7)); lane i of the result holds the sum of v[kLaneHead[i]]. */
static const int32_t kLaneHead[8] = {0, 2, 4, 6, 1, 3, 5, 7};
KILN_UK_INLINE __m256 hsum8x8(const __m256 *v) {
  __m256 b[4];
  for (int32_t i = 0; i < 4; ++i) /* [v2i lo + hi | v2i+1 lo + hi] */
    b[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                         _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
  /* per 128-bit half: [x: b0+b2, b1+b3, y: b0+b2, b1+b3] */
  const __m256 p = _mm256_add_ps(_mm256_shuffle_ps(b[0], b[1], 0x44), _mm256_shuffle_ps(b[0], b[1], 0xEE));
  const __m256 q = _mm256_add_ps(_mm256_shuffle_ps(b[2], b[3], 0x44), _mm256_shuffle_ps(b[2], b[3], 0xEE));
  return _mm256_add_ps(_mm256_shuffle_ps(p, q, 0x88), _mm256_shuffle_ps(p, q, 0xDD));
}

/* 8 consecutive K or V elements of row j at koff as floats (exact conversions). */
KILN_UK_INLINE __m256 load_kv8(uint32_t format, const uint8_t *cache, int64_t idx) {
  if (format == KILN_UK_KV_F32)
    return _mm256_loadu_ps((const float *)cache + idx);
  if (format == KILN_UK_KV_F16)
    return load_f16x8((const uint16_t *)cache + idx);
  return load_i8x8((const int8_t *)cache + idx);
}

/* Bytes per K/V element in `format`. */
KILN_UK_INLINE int32_t kv_elem_bytes(uint32_t format) {
  return format == KILN_UK_KV_F32 ? 4 : format == KILN_UK_KV_F16 ? 2 : 1;
}

/* Asks for the lines of one KV head's row (d elements at element idx). A KV head's rows
 * are kv_heads * d elements apart, a strided walk, which asking ahead speeds up a little
 * (docs/perf.md, "x86 attention by KV head"). */
KILN_UK_INLINE void prefetch_kv_row(uint32_t format, const uint8_t *cache, int64_t idx,
                                    int32_t d) {
  const int32_t eb = kv_elem_bytes(format);
  const uint8_t *p = cache + idx * eb;
  for (int32_t off = 0; off < d * eb; off += 64)
    _mm_prefetch((const char *)(p + off), _MM_HINT_T0);
}

#define KV_PREFETCH_ROWS 8 /* K rows asked for ahead of the scores' walk */

/* Scores of the group's heads over positions 0..len-1 into s[i] (scaled, the softmax's
 * input), K in `format`, for N = 4 or 8 heads; with 4 the reduction's upper 4 inputs stay
 * zero. */
KILN_UK_INLINE void group_scores(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *q, float *const *s, int32_t nh,
                                 int32_t len, int32_t g) {
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d, koff = (int64_t)g * d;
  for (int32_t j = 0; j < len; ++j) {
    /* K rows ahead, and the V row group_values reads next (walked while the scores are) */
    if (j + KV_PREFETCH_ROWS < len)
      prefetch_kv_row(format, a->k_cache, (j + KV_PREFETCH_ROWS) * kv_width + koff, d);
    prefetch_kv_row(a->v_format, a->v_cache, j * kv_width + koff, d);
    __m256 acc[8];
    for (int32_t i = 0; i < 8; ++i)
      acc[i] = _mm256_setzero_ps();
    for (int32_t c = 0; c < d; c += 8) {
      const __m256 k = load_kv8(format, a->k_cache, j * kv_width + koff + c);
      for (int32_t i = 0; i < N; ++i)
        acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(q[i] + c), k, acc[i]);
    }
    float dots[8];
    _mm256_storeu_ps(dots, hsum8x8(acc));
    const float ks = format == KILN_UK_KV_I8 ? a->k_scales[(int64_t)j * a->kv_heads + g] : 1.0f;
    for (int32_t l = 0; l < 8; ++l) {
      const int32_t i = kLaneHead[l];
      if (i < nh)
        s[i][j] = format == KILN_UK_KV_I8 ? dots[l] * ks * a->scale : dots[l] * a->scale;
    }
  }
}

/* out[i] = sum_j p[i][j] V[j] for N = 4 or 8 of the group's heads, 8 dimensions at a time. */
KILN_UK_INLINE void group_values(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *p, float *const *out, int32_t nh,
                                 int32_t len, int32_t g) {
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d, koff = (int64_t)g * d;
  for (int32_t c = 0; c < d; c += 8) {
    __m256 acc[8];
    for (int32_t i = 0; i < N; ++i)
      acc[i] = _mm256_setzero_ps();
    for (int32_t j = 0; j < len; ++j) {
      const __m256 v = load_kv8(format, a->v_cache, j * kv_width + koff + c);
      for (int32_t i = 0; i < N; ++i)
        acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(p[i] + j), v, acc[i]);
    }
    for (int32_t i = 0; i < nh; ++i)
      _mm256_storeu_ps(out[i] + c, acc[i]);
  }
}
