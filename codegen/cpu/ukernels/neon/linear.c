/* kiln micro-kernels, aarch64 NEON: linear (y = x W^T) over plain rows of f32, f16, q8_0,
 * q4_0, q4_1, q3_0 and q4_K/q5_K/q6_K weights (the rows64 and block layouts, and weights
 * shared with the embedding, such as a tied classifier). Overrides generic/linear.c.
 * K-quant groups are decoded by the shared scalar kiln_uk_decode_kquant (common.h).
 *
 * The arithmetic is the generic file's, operation for operation: each 32-element group is
 * decoded exactly into floats (8 registers), and each (row, token) keeps the generic
 * kernel's eight lane accumulators as two float32x4 registers (lanes 0-3, 4-7) with one
 * fused multiply-add per element, reduced in the same order. So the results equal the
 * generic kernel's bit for bit, whatever the tiling. What changes is the instruction
 * count where clang's vectoriser does poorly for aarch64: fp16 is converted by fcvtl, 4 at
 * a time, instead of the generic bit-twiddling, q3_0's 3-bit codes are unpacked in vectors,
 * and the decoded group is shared by TT tokens. Executed instructions per 512x512 call, one
 * token, clang as in an artifact (tests/bench/emu_counts.py): f16 1,268,369 generic ->
 * 264,311 here, q3_0 4,349,069 -> 780,414; f32 197,259 -> 199,280 and q8_0 565,916 ->
 * 557,686 (no gain: clang vectorises those loops already).
 */
#include <arm_neon.h>

#include "common.h"
#include "ukernel_abi.h"

#define GROUP 32
#define TT 4 /* tokens per tile: 8 weight + 2 x TT accumulator + 2 activation registers */

/* Elements [i0, i0 + 32) of a row, exactly as generic/linear.c decodes them. */
KILN_UK_INLINE void decode_group(uint32_t format, const uint8_t *row, int32_t i0,
                                 float32x4_t w[8]) {
  if (format == KILN_GGML_TYPE_F32) {
    const float *p = (const float *)(row + (int64_t)i0 * 4);
    for (int32_t i = 0; i < 8; ++i)
      w[i] = vreinterpretq_f32_u8(vld1q_u8((const uint8_t *)(p + 4 * i)));
  } else if (format == KILN_GGML_TYPE_F16) {
    const uint8_t *p = row + (int64_t)i0 * 2;
    for (int32_t i = 0; i < 8; ++i)
      w[i] = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p + 8 * i)));
  } else if (format == KILN_TYPE_Q3_0) {
    /* kiln_uk_decode_q3 in vectors: element j's low bits are bits 2*(j/8) of qs[j%8], its
     * high bit is bit j of qh (byte j/8, bit j%8) */
    const uint8_t *b = row + (int64_t)(i0 / GROUP) * (int64_t)sizeof(kiln_block_q3_0_t);
    const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b));
    const uint8x8_t qs = vld1_u8(b + 2), three = vdup_n_u8(3);
    static const uint8_t kBit[8] = {1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x8_t bit = vld1_u8(kBit);
    const uint8x8_t lo[4] = {vand_u8(qs, three), vand_u8(vshr_n_u8(qs, 2), three),
                             vand_u8(vshr_n_u8(qs, 4), three), vshr_n_u8(qs, 6)};
    for (int32_t k = 0; k < 4; ++k) {
      const uint8x8_t hi = vand_u8(vtst_u8(vdup_n_u8(b[10 + k]), bit), vdup_n_u8(4));
      const int16x8_t q = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vorr_u8(lo[k], hi))),
                                    vdupq_n_s16(4));
      w[2 * k] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), d);
      w[2 * k + 1] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(q))), d);
    }
  } else if (kiln_uk_is_kquant(format)) {
    float tmp[GROUP]; /* the shared scalar decoder, then into registers */
    kiln_uk_decode_kquant(format, row, i0, tmp);
    for (int32_t i = 0; i < 8; ++i)
      w[i] = vld1q_f32(tmp + 4 * i);
  } else {
    const uint8_t *b = row + (int64_t)(i0 / GROUP) * kiln_uk_block_bytes(format);
    const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b));
    int8x16_t q[2];
    if (format == KILN_GGML_TYPE_Q8_0) {
      q[0] = vld1q_s8((const int8_t *)(b + 2));
      q[1] = vld1q_s8((const int8_t *)(b + 18));
    } else {
      /* q4: element j < 16 is the low nibble of qs[j], j + 16 the high one */
      const uint8x16_t qs = vld1q_u8(b + (format == KILN_GGML_TYPE_Q4_1 ? 4 : 2));
      const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(qs, vdupq_n_u8(15)));
      const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(qs, 4));
      const int8x16_t off = vdupq_n_s8(format == KILN_GGML_TYPE_Q4_0 ? 8 : 0);
      q[0] = vsubq_s8(lo, off);
      q[1] = vsubq_s8(hi, off);
    }
    for (int32_t h = 0; h < 2; ++h) {
      const int16x8_t s0 = vmovl_s8(vget_low_s8(q[h])), s1 = vmovl_s8(vget_high_s8(q[h]));
      const int32x4_t v[4] = {vmovl_s16(vget_low_s16(s0)), vmovl_s16(vget_high_s16(s0)),
                              vmovl_s16(vget_low_s16(s1)), vmovl_s16(vget_high_s16(s1))};
      for (int32_t i = 0; i < 4; ++i) {
        const float32x4_t c = vcvtq_f32_s32(v[i]);
        /* q4_1: c * d + m, one rounding as the generic kernel's contracted expression */
        w[4 * h + i] = format == KILN_GGML_TYPE_Q4_1
                           ? vfmaq_f32(vdupq_n_f32(kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b + 2))),
                                       c, vdupq_n_f32(d))
                           : vmulq_n_f32(c, d);
      }
    }
  }
}

/* y[t0..t0+T, r] for one row (T constant after inlining, <= TT). */
KILN_UK_INLINE void row_tokens(const linear_args_t *a, uint32_t format, int32_t mode,
                               const uint8_t *row, int64_t r, int32_t t0, int32_t T) {
  float32x4_t lo[TT], hi[TT]; /* lanes 0-3 and 4-7 of the generic kernel's acc[t] */
  for (int32_t t = 0; t < T; ++t)
    lo[t] = hi[t] = vdupq_n_f32(0.0f);
  const int32_t in = a->in;
  int32_t i0 = 0;
  for (; i0 + GROUP <= in; i0 += GROUP) {
    float32x4_t w[8];
    decode_group(format, row, i0, w);
    for (int32_t t = 0; t < T; ++t) {
      const float *xt = a->x + (int64_t)(t0 + t) * in + i0;
      for (int32_t k = 0; k < 4; ++k) {
        lo[t] = vfmaq_f32(lo[t], w[2 * k], vld1q_f32(xt + 8 * k));
        hi[t] = vfmaq_f32(hi[t], w[2 * k + 1], vld1q_f32(xt + 8 * k + 4));
      }
    }
  }
  for (int32_t t = 0; t < T; ++t) {
    float acc[8];
    vst1q_f32(acc, lo[t]);
    vst1q_f32(acc + 4, hi[t]);
    if (i0 < in) { /* last partial group, scalar as in the generic kernel: never read x
                      (or f32/f16 weights) past `in` */
      float wbuf[GROUP];
      const int32_t count = in - i0;
      if (format == KILN_GGML_TYPE_F32 || format == KILN_GGML_TYPE_F16) {
        for (int32_t j = 0; j < count; ++j)
          wbuf[j] = format == KILN_GGML_TYPE_F32
                        ? ((const kiln_uk_uf32_t *)row)[i0 + j]
                        : kiln_uk_fp16_to_fp32(((const kiln_uk_uu16_t *)row)[i0 + j]);
      } else {
        float32x4_t w[8];
        decode_group(format, row, i0, w);
        for (int32_t i = 0; i < 8; ++i)
          vst1q_f32(wbuf + 4 * i, w[i]);
      }
      const float *xt = a->x + (int64_t)(t0 + t) * in + i0;
      for (int32_t j = 0; j < count; ++j)
        acc[j % 8] += wbuf[j] * xt[j];
    }
    const float sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    kiln_uk_linear_store(&a->ep, mode, t0 + t, r, sum);
  }
}

KILN_UK_INLINE void linear_rows(const linear_args_t *a, uint32_t format, int32_t mode,
                                int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t *row = a->w + r * a->row_stride;
    int32_t t0 = 0;
    for (; t0 + TT <= a->n; t0 += TT)
      row_tokens(a, format, mode, row, r, t0, TT);
    for (; t0 < a->n; ++t0)
      row_tokens(a, format, mode, row, r, t0, 1);
  }
}

#include "linear_entry.h"
