/* kiln micro-kernels, aarch64 NEON: attention's row operations over the KV cache. Decode
 * reads the whole cache once per token and head, so these loops are the kernel at long
 * context; the generic C converts f16 and int8 elements one at a time. f16 rows load
 * through fcvtl, int8 rows through sxtl + scvtf.
 *
 * The arithmetic is x86/attention.c's, operation for operation: 8 lanes (two float32x4)
 * accumulated with fused multiply-adds, reduced as (lane j + lane j+4), then (0+2) + (1+3),
 * the tail after the reduction. So an aarch64 artifact's attention gives the host x86
 * artifact's results bit for bit (the kernel-call hashes in tests/emu/aarch64_e2e.py
 * compare them). Storing (rounding to f16/int8, RoPE) and the softmax are the generic
 * code, included below.
 *
 * With GQA the query heads of one KV head run together (generic attend_heads, up to 8):
 * each K and V row is loaded and converted once for all of them, and each head keeps its
 * own two accumulators, reduced by hsum8, so the bits are the same as head by head.
 */
#include <arm_neon.h>

#include "common.h"

#define KILN_UK_ATTENTION_ROW_OPS 1
#define KILN_UK_ATTENTION_GROUP_OPS 1
#define KILN_UK_ATTENTION_MIN_GROUP 2 /* two 4-lane chains per head */

/* 8 lanes as lo (0-3) and hi (4-7): x86's hsum8 order */
KILN_UK_INLINE float hsum8(float32x4_t lo, float32x4_t hi) {
  const float32x4_t x = vaddq_f32(lo, hi);
  const float32x2_t y = vadd_f32(vget_low_f32(x), vget_high_f32(x));
  return vget_lane_f32(y, 0) + vget_lane_f32(y, 1);
}

KILN_UK_INLINE float32x4_t load_f16x4(const uint16_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* 8 int8 as two float32x4 (exact) */
KILN_UK_INLINE void load_i8x8(const int8_t *p, float32x4_t *lo, float32x4_t *hi) {
  const int16x8_t w = vmovl_s8(vld1_s8(p));
  *lo = vcvtq_f32_s32(vmovl_s16(vget_low_s16(w)));
  *hi = vcvtq_f32_s32(vmovl_s16(vget_high_s16(w)));
}

KILN_UK_INLINE float dot_f32(const float *a, const float *b, int32_t d) {
  float32x4_t lo = vdupq_n_f32(0.0f), hi = lo;
  int32_t i = 0;
  for (; i + 16 <= d; i += 16) { /* two 8-lane steps, in order */
    lo = vfmaq_f32(lo, vld1q_f32(a + i), vld1q_f32(b + i));
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    lo = vfmaq_f32(lo, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  if (i + 8 <= d) { /* at most once after the 16-wide loop */
    lo = vfmaq_f32(lo, vld1q_f32(a + i), vld1q_f32(b + i));
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    i += 8;
  }
  float r = hsum8(lo, hi);
  for (; i < d; ++i)
    r += a[i] * b[i];
  return r;
}

KILN_UK_INLINE float dot_f16(const float *a, const uint16_t *b, int32_t d) {
  float32x4_t lo = vdupq_n_f32(0.0f), hi = lo;
  int32_t i = 0;
  for (; i + 16 <= d; i += 16) { /* two 8-lane steps, in order */
    lo = vfmaq_f32(lo, vld1q_f32(a + i), load_f16x4(b + i));
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 4), load_f16x4(b + i + 4));
    lo = vfmaq_f32(lo, vld1q_f32(a + i + 8), load_f16x4(b + i + 8));
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 12), load_f16x4(b + i + 12));
  }
  if (i + 8 <= d) { /* at most once after the 16-wide loop */
    lo = vfmaq_f32(lo, vld1q_f32(a + i), load_f16x4(b + i));
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 4), load_f16x4(b + i + 4));
    i += 8;
  }
  float r = hsum8(lo, hi);
  for (; i < d; ++i)
    r += a[i] * kiln_uk_fp16_to_fp32(b[i]);
  return r;
}

KILN_UK_INLINE float dot_i8(const float *a, const int8_t *b, int32_t d) {
  float32x4_t lo = vdupq_n_f32(0.0f), hi = lo;
  int32_t i = 0;
  for (; i + 16 <= d; i += 16) { /* two 8-lane steps, in order */
    float32x4_t b0, b1, b2, b3;
    load_i8x8(b + i, &b0, &b1);
    load_i8x8(b + i + 8, &b2, &b3);
    lo = vfmaq_f32(lo, vld1q_f32(a + i), b0);
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 4), b1);
    lo = vfmaq_f32(lo, vld1q_f32(a + i + 8), b2);
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 12), b3);
  }
  if (i + 8 <= d) { /* at most once after the 16-wide loop */
    float32x4_t b0, b1;
    load_i8x8(b + i, &b0, &b1);
    lo = vfmaq_f32(lo, vld1q_f32(a + i), b0);
    hi = vfmaq_f32(hi, vld1q_f32(a + i + 4), b1);
    i += 8;
  }
  float r = hsum8(lo, hi);
  for (; i < d; ++i)
    r += a[i] * (float)b[i];
  return r;
}

KILN_UK_INLINE void axpy_f32(float p, const float *v, float *o, int32_t d) {
  int32_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int32_t j = 0; j < 16; j += 4)
      vst1q_f32(o + i + j, vfmaq_n_f32(vld1q_f32(o + i + j), vld1q_f32(v + i + j), p));
  if (i + 8 <= d) { /* head sizes 8, 24, 40, ...: one pass, no loop */
    for (int32_t j = 0; j < 8; j += 4)
      vst1q_f32(o + i + j, vfmaq_n_f32(vld1q_f32(o + i + j), vld1q_f32(v + i + j), p));
    i += 8;
  }
  for (; i + 4 <= d; i += 4)
    vst1q_f32(o + i, vfmaq_n_f32(vld1q_f32(o + i), vld1q_f32(v + i), p));
  for (; i < d; ++i)
    o[i] += p * v[i];
}

KILN_UK_INLINE void axpy_f16(float p, const uint16_t *v, float *o, int32_t d) {
  int32_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int32_t j = 0; j < 16; j += 4)
      vst1q_f32(o + i + j, vfmaq_n_f32(vld1q_f32(o + i + j), load_f16x4(v + i + j), p));
  if (i + 8 <= d) { /* head sizes 8, 24, 40, ...: one pass, no loop */
    for (int32_t j = 0; j < 8; j += 4)
      vst1q_f32(o + i + j, vfmaq_n_f32(vld1q_f32(o + i + j), load_f16x4(v + i + j), p));
    i += 8;
  }
  for (; i + 4 <= d; i += 4)
    vst1q_f32(o + i, vfmaq_n_f32(vld1q_f32(o + i), load_f16x4(v + i), p));
  for (; i < d; ++i)
    o[i] += p * kiln_uk_fp16_to_fp32(v[i]);
}

#include "generic/attention.c"

/* Elements idx..idx+7 of a K or V row as two float32x4 (exact conversions). */
KILN_UK_INLINE void load_kv8(uint32_t format, const uint8_t *cache, int64_t idx,
                             float32x4_t *lo, float32x4_t *hi) {
  if (format == KILN_UK_KV_F32) {
    *lo = vld1q_f32((const float *)cache + idx);
    *hi = vld1q_f32((const float *)cache + idx + 4);
  } else if (format == KILN_UK_KV_F16) {
    *lo = load_f16x4((const uint16_t *)cache + idx);
    *hi = load_f16x4((const uint16_t *)cache + idx + 4);
  } else {
    load_i8x8((const int8_t *)cache + idx, lo, hi);
  }
}

/* Scores of N = 2, 4 or 8 heads over positions 0..len-1 into s[i] (scaled): dot_*'s lanes
 * and hsum8 per head, 2N independent FMA chains. */
KILN_UK_INLINE void group_scores(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *q, float *const *s, int32_t nh,
                                 int32_t len, int32_t g) {
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d, koff = (int64_t)g * d;
  for (int32_t j = 0; j < len; ++j) {
    float32x4_t lo[8], hi[8];
    for (int32_t i = 0; i < N; ++i)
      lo[i] = hi[i] = vdupq_n_f32(0.0f);
    for (int32_t c = 0; c < d; c += 8) {
      float32x4_t klo, khi;
      load_kv8(format, a->k_cache, j * kv_width + koff + c, &klo, &khi);
      for (int32_t i = 0; i < N; ++i) {
        lo[i] = vfmaq_f32(lo[i], vld1q_f32(q[i] + c), klo);
        hi[i] = vfmaq_f32(hi[i], vld1q_f32(q[i] + c + 4), khi);
      }
    }
    const float ks = format == KILN_UK_KV_I8 ? a->k_scales[(int64_t)j * a->kv_heads + g] : 1.0f;
    for (int32_t i = 0; i < nh; ++i) {
      const float dot = hsum8(lo[i], hi[i]);
      s[i][j] = format == KILN_UK_KV_I8 ? dot * ks * a->scale : dot * a->scale;
    }
  }
}

/* out[i] = sum_j p[i][j] V[j] for N heads, 8 dimensions at a time (axpy_*'s fused adds). */
KILN_UK_INLINE void group_values(const attention_args_t *a, uint32_t format, int32_t N,
                                 const float *const *p, float *const *out, int32_t nh,
                                 int32_t len, int32_t g) {
  const int32_t d = a->head_dim;
  const int64_t kv_width = (int64_t)a->kv_heads * d, koff = (int64_t)g * d;
  for (int32_t c = 0; c < d; c += 8) {
    float32x4_t lo[8], hi[8];
    for (int32_t i = 0; i < N; ++i)
      lo[i] = hi[i] = vdupq_n_f32(0.0f);
    for (int32_t j = 0; j < len; ++j) {
      float32x4_t vlo, vhi;
      load_kv8(format, a->v_cache, j * kv_width + koff + c, &vlo, &vhi);
      for (int32_t i = 0; i < N; ++i) {
        lo[i] = vfmaq_n_f32(lo[i], vlo, p[i][j]);
        hi[i] = vfmaq_n_f32(hi[i], vhi, p[i][j]);
      }
    }
    for (int32_t i = 0; i < nh; ++i) {
      vst1q_f32(out[i] + c, lo[i]);
      vst1q_f32(out[i] + c + 4, hi[i]);
    }
  }
}
