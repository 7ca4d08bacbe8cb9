/* kiln micro-kernels, x86 (AVX2 + FMA + F16C; AVX-512F/BW when __AVX512F__): linear
 * (y = x W^T) for f32, f16 and q8_0 weights. Overrides generic/linear.c.
 *
 * Register tiles of ROWS output rows x TOKENS tokens: 8 x 1 for decode (eight independent
 * FMA chains hide the FMA latency while one x vector is reused by eight rows) and 4 x 2
 * for prefill. Weights are decoded 32 elements (one q8_0 block) at a time into fp32
 * vectors: q8_0 as int8 -> int32 -> float times the block scale, which is exact, so every
 * format runs the same fp32 FMA loop and matches the reference on the dequantised weights
 * to rounding. (Quantising x to int8 for maddubs/vpdpbusd would double the arithmetic
 * throughput but adds ~1e-3 relative error per dot product and needs scratch space the
 * ABI does not give linear; decode is bound by weight bandwidth, which both share.)
 *
 * A row's tail (in not a multiple of 32) is read with masked loads, so x is never read
 * past `in`; the zero padding of a q8_0 row's last block is read but multiplies zeros.
 * Each (row, token) accumulator sees the same operations in any tile, so results do not
 * depend on the task split. Rows are split into tasks as in the generic kernel.
 */
#include <immintrin.h>

#include "common.h"
#include "ukernel_abi.h"

#define GROUP 32

#if defined(__AVX512F__)
#define VW 16
typedef __m512 vf_t;
#define V_ZERO() _mm512_setzero_ps()
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_SET1(s) _mm512_set1_ps(s)
KILN_UK_INLINE vf_t v_load(const float *p, int32_t count) {
  if (count >= VW)
    return _mm512_loadu_ps(p);
  return _mm512_maskz_loadu_ps((__mmask16)((1u << count) - 1), p);
}
KILN_UK_INLINE vf_t v_load_f16(const uint16_t *p, int32_t count) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  if (count < VW)
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)((1u << count) - 1), p));
#else
  if (count < VW) {
    uint16_t tmp[VW] = {0};
    for (int32_t j = 0; j < count; ++j)
      tmp[j] = ((const kiln_uk_uu16_t *)p)[j];
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)tmp));
  }
#endif
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
KILN_UK_INLINE vf_t v_load_q8(const int8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
KILN_UK_INLINE float v_reduce(vf_t v) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), hi);
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#else /* AVX2 */
#define VW 8
typedef __m256 vf_t;
#define V_ZERO() _mm256_setzero_ps()
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_SET1(s) _mm256_set1_ps(s)
/* lanes < count are all-ones: a window into 8 x -1 followed by 8 x 0 */
static const int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
KILN_UK_INLINE vf_t v_load(const float *p, int32_t count) {
  if (count >= VW)
    return _mm256_loadu_ps(p);
  return _mm256_maskload_ps(p, _mm256_loadu_si256((const __m256i *)(kMaskWindow + 8 - count)));
}
KILN_UK_INLINE vf_t v_load_f16(const uint16_t *p, int32_t count) {
  if (count < VW) {
    uint16_t tmp[VW] = {0};
    for (int32_t j = 0; j < count; ++j)
      tmp[j] = ((const kiln_uk_uu16_t *)p)[j];
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tmp));
  }
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
KILN_UK_INLINE vf_t v_load_q8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
KILN_UK_INLINE float v_reduce(vf_t v) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#endif

#define CHUNKS (GROUP / VW)
#define MAX_ROWS 8
#define MAX_TOKENS 2

typedef struct linear_args_s {
  uint32_t format;
  const float *x;
  int32_t n, in;
  const uint8_t *w;
  int64_t row_stride;
  int32_t out_features;
  float *y;
} linear_args_t;

/* Chunk c (VW elements, `count` of them valid) of the group at element i0 of a row.
 * For q8_0, scale is the block's scale as a vector. */
KILN_UK_INLINE vf_t load_w(uint32_t format, const uint8_t *row, int32_t i0, int32_t c,
                           int32_t count, vf_t scale) {
  if (format == KILN_GGML_TYPE_F32)
    return v_load((const float *)row + i0 + c * VW, count);
  if (format == KILN_GGML_TYPE_F16)
    return v_load_f16((const uint16_t *)row + i0 + c * VW, count);
  const uint8_t *b = row + (int64_t)(i0 / QK8_0) * (int64_t)sizeof(kiln_block_q8_0_t);
  return V_MUL(v_load_q8((const int8_t *)(b + 2) + c * VW), scale);
}

KILN_UK_INLINE vf_t block_scale(uint32_t format, const uint8_t *row, int32_t i0) {
  if (format != KILN_GGML_TYPE_Q8_0)
    return V_ZERO();
  const uint8_t *b = row + (int64_t)(i0 / QK8_0) * (int64_t)sizeof(kiln_block_q8_0_t);
  return V_SET1(_cvtsh_ss(kiln_uk_load_u16(b)));
}

/* One group of 32 elements (`valid` of them in x) for a ROWS x TOKENS tile. */
KILN_UK_INLINE void tile_group(uint32_t format, int32_t ROWS, int32_t TOKENS,
                               const uint8_t *const *rows, const float *const *xs, int32_t i0,
                               int32_t valid, vf_t acc[MAX_ROWS][MAX_TOKENS]) {
  vf_t scale[MAX_ROWS];
  for (int32_t r = 0; r < ROWS; ++r)
    scale[r] = block_scale(format, rows[r], i0);
  for (int32_t c = 0; c < CHUNKS; ++c) {
    const int32_t count = valid - c * VW;
    if (count <= 0)
      break;
    vf_t xv[MAX_TOKENS];
    for (int32_t t = 0; t < TOKENS; ++t)
      xv[t] = v_load(xs[t] + i0 + c * VW, count);
    for (int32_t r = 0; r < ROWS; ++r) {
      /* q8_0 weights past `in` are zero padding inside the block: load them whole */
      const vf_t wv = load_w(format, rows[r], i0, c, format == KILN_GGML_TYPE_Q8_0 ? VW : count,
                             scale[r]);
      for (int32_t t = 0; t < TOKENS; ++t)
        acc[r][t] = V_FMA(wv, xv[t], acc[r][t]);
    }
  }
}

/* y[t0.., r0..] for a ROWS x TOKENS tile (compile-time constants after inlining). */
KILN_UK_INLINE void tile(const linear_args_t *a, uint32_t format, int32_t ROWS, int32_t TOKENS,
                         int64_t r0, int32_t t0) {
  const uint8_t *rows[MAX_ROWS];
  const float *xs[MAX_TOKENS];
  vf_t acc[MAX_ROWS][MAX_TOKENS];
  for (int32_t r = 0; r < ROWS; ++r) {
    rows[r] = a->w + (r0 + r) * a->row_stride;
    for (int32_t t = 0; t < TOKENS; ++t)
      acc[r][t] = V_ZERO();
  }
  for (int32_t t = 0; t < TOKENS; ++t)
    xs[t] = a->x + (int64_t)(t0 + t) * a->in;
  int32_t i0 = 0;
  for (; i0 + GROUP <= a->in; i0 += GROUP)
    tile_group(format, ROWS, TOKENS, rows, xs, i0, GROUP, acc);
  if (i0 < a->in)
    tile_group(format, ROWS, TOKENS, rows, xs, i0, a->in - i0, acc);
  for (int32_t r = 0; r < ROWS; ++r)
    for (int32_t t = 0; t < TOKENS; ++t)
      a->y[(int64_t)(t0 + t) * a->out_features + r0 + r] = v_reduce(acc[r][t]);
}

KILN_UK_INLINE void linear_rows(const linear_args_t *a, uint32_t format, int64_t r0,
                                int64_t r1) {
  if (a->n == 1) {
    int64_t r = r0;
    for (; r + 8 <= r1; r += 8)
      tile(a, format, 8, 1, r, 0);
    for (; r < r1; ++r)
      tile(a, format, 1, 1, r, 0);
    return;
  }
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    int32_t t = 0;
    for (; t + 2 <= a->n; t += 2)
      tile(a, format, 4, 2, r, t);
    if (t < a->n)
      tile(a, format, 4, 1, r, t);
  }
  for (; r < r1; ++r) {
    int32_t t = 0;
    for (; t + 2 <= a->n; t += 2)
      tile(a, format, 1, 2, r, t);
    if (t < a->n)
      tile(a, format, 1, 1, r, t);
  }
}

static void linear_task(void *arg, int32_t task, int32_t n_tasks) {
  const linear_args_t *a = (const linear_args_t *)arg;
  int64_t r0, r1;
  kiln_uk_task_range(a->out_features, task, n_tasks, &r0, &r1);
  switch (a->format) {
  case KILN_GGML_TYPE_F32: linear_rows(a, KILN_GGML_TYPE_F32, r0, r1); break;
  case KILN_GGML_TYPE_F16: linear_rows(a, KILN_GGML_TYPE_F16, r0, r1); break;
  default: linear_rows(a, KILN_GGML_TYPE_Q8_0, r0, r1); break;
  }
}

void kiln_uk_linear(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x, int32_t n,
                    int32_t in, const uint8_t *w, int64_t row_stride, int32_t out_features,
                    float *y) {
  if (n <= 0 || out_features <= 0)
    return;
  linear_args_t a = {format, x, n, in, w, row_stride, out_features, y};
  const int64_t work = (int64_t)n * in * out_features;
  const int32_t n_tasks =
      kiln_uk_task_count(ctx, work, KILN_UK_LINEAR_PARALLEL_MIN_WORK, out_features);
  kiln_uk_parallel(ctx, linear_task, &a, n_tasks);
}
