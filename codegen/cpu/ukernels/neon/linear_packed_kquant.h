/* kiln micro-kernels, aarch64 NEON: q4_K_r16, q5_K_r16 and q6_K_r16 (kiln/quant_packed.h) on
 * the sdot-by-element tiles of linear_packed.c, which includes this file; packed_kquant.h states
 * the math and the float steps, which these follow to the bit.
 *
 * A sub-block is one 32-element activation block and its codes are laid out as q4_1_r16's
 * chunks (lane r of chunk k: 4 weights of row r), so each runs the q4 chunk step of tile():
 * - q4_K: the integer sum as q4_1's, then the row's scale d * sc_j and minimum -dmin * m_j,
 *   unpacked from the super-block header for all 16 rows in one u8 register each (d, dmin
 *   and the top scale bits loaded once per super-block; per sub-block 7 integer operations,
 *   then the widening to float, against 32 sdot);
 * - q5_K: q4_K's step with the codes' fifth bits inserted above the nibbles (a shift, an and
 *   and an insert per register, as q6_K's);
 * - q6_K: the 6-bit codes rebuilt from a nibble chunk and the 2-bit chunks (a shift, an and
 *   and an insert per register), two int32 chains per row register (one per 16-element half, each
 *   started at -32 times the activation half sum), weighted by the int8 scales in int32.
 * Prefill runs tiles of TT tokens on the same step (i8mm's usmmla tiles skip these
 * formats, as mm_interleave does).
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_NEON_LINEAR_PACKED_KQUANT_H_
#define KILN_CODEGEN_CPU_UKERNELS_NEON_LINEAR_PACKED_KQUANT_H_

#include "../packed_kquant.h"

/* 16 u8 lanes (rows) as 4 registers of floats (rows 4q..4q+3) */
KILN_UK_INLINE void kq_u8_floats(uint8x16_t b, float32x4_t v[Q]) {
  const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_u8(vget_high_u8(b));
  v[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo)));
  v[1] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo)));
  v[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi)));
  v[3] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi)));
}

/* 16 bytes as 4 registers of s32 lanes */
KILN_UK_INLINE void kq_s8_lanes(const uint8_t *p, int32x4_t v[Q]) {
  const int8x16_t b = vld1q_s8((const int8_t *)p);
  const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_s8(vget_high_s8(b));
  v[0] = vmovl_s16(vget_low_s16(lo));
  v[1] = vmovl_s16(vget_high_s16(lo));
  v[2] = vmovl_s16(vget_low_s16(hi));
  v[3] = vmovl_s16(vget_high_s16(hi));
}

/* Bits 2k, 2k + 1 of each byte of h at bits 0-1 (low) or 4-5 (top), the rest zero;
 * immediate shifts once k is a constant */
KILN_UK_INLINE uint8x16_t kq6_low2(uint8x16_t h, int32_t k) {
  const uint8x16_t three = vdupq_n_u8(3);
  switch (k) {
  case 0: return vandq_u8(h, three);
  case 1: return vandq_u8(vshrq_n_u8(h, 2), three);
  case 2: return vandq_u8(vshrq_n_u8(h, 4), three);
  default: return vshrq_n_u8(h, 6);
  }
}
KILN_UK_INLINE uint8x16_t kq6_top2(uint8x16_t h, int32_t k) {
  const uint8x16_t mask = vdupq_n_u8(0x30);
  switch (k) {
  case 0: return vandq_u8(vshlq_n_u8(h, 4), mask);
  case 1: return vandq_u8(vshlq_n_u8(h, 2), mask);
  case 2: return vandq_u8(h, mask);
  default: return vandq_u8(vshrq_n_u8(h, 2), mask);
  }
}

/* q6_K chunk k: rows' 6-bit codes of elements 4k..4k+3 (lo) and 16 + 4k.. (hi): the
 * nibbles of the chunk with bits 2k, 2k + 1 of the two 2-bit chunks as bits 4-5 (vsli
 * keeps the low nibble and inserts above it; vsri keeps the top bits and inserts below) */
KILN_UK_INLINE void load_q6(const uint8_t *codes, int32_t k, int8x16_t lo[Q], int8x16_t hi[Q]) {
  for (int32_t q = 0; q < Q; ++q) {
    const uint8x16_t raw = vld1q_u8(codes + k * 64 + 16 * q);
    const uint8x16_t h0 = vld1q_u8(codes + 256 + 16 * q), h1 = vld1q_u8(codes + 320 + 16 * q);
    lo[q] = vreinterpretq_s8_u8(vsliq_n_u8(raw, kq6_low2(h0, k), 4));
    hi[q] = vreinterpretq_s8_u8(vsriq_n_u8(kq6_top2(h1, k), raw, 4));
  }
}

/* q5_K chunk k: the nibbles with the fifth chunk's bit k (elements 4k..) or 4 + k (16 + 4k..)
 * as bit 4 */
KILN_UK_INLINE void load_q5(const uint8_t *codes, int32_t k, int8x16_t lo[Q], int8x16_t hi[Q]) {
  const uint8x16_t one = vdupq_n_u8(1), bit4 = vdupq_n_u8(0x10);
  for (int32_t q = 0; q < Q; ++q) {
    const uint8x16_t raw = vld1q_u8(codes + k * 64 + 16 * q);
    const uint8x16_t h = vld1q_u8(codes + 256 + 16 * q);
    uint8x16_t hk; /* h >> k, immediate shifts once k is a constant */
    switch (k) {
    case 0: hk = h; break;
    case 1: hk = vshrq_n_u8(h, 1); break;
    case 2: hk = vshrq_n_u8(h, 2); break;
    default: hk = vshrq_n_u8(h, 3); break;
    }
    lo[q] = vreinterpretq_s8_u8(vsliq_n_u8(raw, vandq_u8(hk, one), 4));
    hi[q] = vreinterpretq_s8_u8(vsriq_n_u8(vandq_u8(hk, bit4), raw, 4));
  }
}

/* Rows of group g for tokens t0..t0+T-1 (T constant after inlining, <= TT). */
KILN_UK_INLINE void kq_tile(const packed_args_t *a, uint32_t format, int64_t g, int32_t t0,
                            int32_t T) {
  const uint8_t *grp = a->w + g * a->group_stride;
  qact_t xq[TT];
  float32x4_t acc[TT][Q];
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    xq[t] = packed_qact(a, t0 + t);
    for (int32_t q = 0; q < Q; ++q)
      acc[t][q] = vdupq_n_f32(0.0f);
  }
  const int32_t ns = a->nb / 8;
  const uint8x16_t three = vdupq_n_u8(3);
  for (int32_t s = 0; s < ns; ++s) {
    const uint8_t *sb = grp + kiln_packed_super_offset(format, (uint64_t)s);
    /* q4_K: d, -dmin and the top scale bits (row r's 32-bit word: 4 bits per sub-block)
     * narrowed to u16 lanes, rows 0-7 and 8-15, sub-blocks 0-3 and 4-7; q6_K: d */
    float32x4_t d[Q], ndmin[Q];
    uint16x8_t high[2][2];
    for (int32_t q = 0; q < Q; ++q) {
      if (format != KILN_TYPE_Q6_K_R16) {
        d[q] = halves4(sb + 8 * q);
        ndmin[q] = vnegq_f32(halves4(sb + 32 + 8 * q));
      } else {
        d[q] = halves4(grp + kiln_packed_q6_k_d_offset((uint64_t)s) + 8 * q);
      }
    }
    if (format != KILN_TYPE_Q6_K_R16)
      for (int32_t h = 0; h < 2; ++h) {
        const uint32x4_t w0 = vreinterpretq_u32_u8(vld1q_u8(sb + 192 + 32 * h));
        const uint32x4_t w1 = vreinterpretq_u32_u8(vld1q_u8(sb + 208 + 32 * h));
        high[0][h] = vcombine_u16(vmovn_u32(w0), vmovn_u32(w1));
        high[1][h] = vcombine_u16(vshrn_n_u32(w0, 16), vshrn_n_u32(w1, 16));
      }
    KILN_UK_NO_UNROLL
    for (int32_t j = 0; j < 8; ++j) {
      MCA_MARK(format, T, "# LLVM-MCA-BEGIN block");
      const int32_t b = s * 8 + j;
      int8x16_t x0[TT], x1[TT];
      KILN_UK_UNROLL
      for (int32_t t = 0; t < T; ++t) {
        const int8_t *xb = xq[t].q + b * KILN_PACK_BLOCK;
        x0[t] = vld1q_s8(xb);
        x1[t] = vld1q_s8(xb + 16);
      }
      if (format != KILN_TYPE_Q6_K_R16) {
        const int32_t q5 = format == KILN_TYPE_Q5_K_R16;
        const uint8_t *codes =
            sb + KILN_Q4_K_R16_CODES + j * (q5 ? KILN_Q5_K_R16_SUB_BYTES : 256);
        int32x4_t s4[TT][Q];
        KILN_UK_UNROLL
        for (int32_t t = 0; t < T; ++t)
          for (int32_t q = 0; q < Q; ++q)
            s4[t][q] = vdupq_n_s32(0);
        int8x16_t lo[Q], hi[Q];
#define KQ4_CHUNK(k)                                                                           \
  if (q5)                                                                                      \
    load_q5(codes, k, lo, hi);                                                                 \
  else                                                                                         \
    load_q4(codes, k, lo, hi);                                                                 \
  KILN_UK_UNROLL for (int32_t t = 0; t < T; ++t) {                                             \
    DOT4(s4[t], lo, x0[t], k);                                                                 \
    DOT4(s4[t], hi, x1[t], k);                                                                 \
  }
        KQ4_CHUNK(0) KQ4_CHUNK(1) KQ4_CHUNK(2) KQ4_CHUNK(3)
#undef KQ4_CHUNK
        /* the 16 rows' 6-bit scale and min of sub-block j in u8 lanes: low 4 bits from
         * the byte of j, top 2 from nibble j of the row's word (vsli: shift and insert) */
        const uint8x16_t low = vld1q_u8(sb + 64 + j * 16);
        const int16x8_t right = vdupq_n_s16((int16_t)(-4 * (j & 3)));
        const uint8x16_t hb = vcombine_u8(vmovn_u16(vshlq_u16(high[j >> 2][0], right)),
                                          vmovn_u16(vshlq_u16(high[j >> 2][1], right)));
        float32x4_t scf[Q], mf[Q];
        kq_u8_floats(vsliq_n_u8(low, vandq_u8(hb, three), 4), scf);
        kq_u8_floats(vsliq_n_u8(vshrq_n_u8(low, 4), vandq_u8(vshrq_n_u8(hb, 2), three), 4), mf);
        for (int32_t q = 0; q < Q; ++q) {
          const float32x4_t dw = vmulq_f32(d[q], scf[q]);
          const float32x4_t mw = vmulq_f32(ndmin[q], mf[q]);
          KILN_UK_UNROLL
          for (int32_t t = 0; t < T; ++t) {
            acc[t][q] = vfmaq_f32(acc[t][q], vcvtq_f32_s32(s4[t][q]), vmulq_n_f32(dw, xq[t].d[b]));
            acc[t][q] = vfmaq_f32(acc[t][q], mw, vdupq_n_f32(xq[t].ds[b]));
          }
        }
      } else {
        const uint8_t *codes = sb + KILN_Q6_K_R16_CODES + j * KILN_Q6_K_R16_SUB_BYTES;
        int32x4_t i0[TT][Q], i1[TT][Q];
        KILN_UK_UNROLL
        for (int32_t t = 0; t < T; ++t) {
          const int32_t s0 = xq[t].o[b], s1 = xq[t].s[b] - s0;
          for (int32_t q = 0; q < Q; ++q) {
            i0[t][q] = vdupq_n_s32(-32 * s0);
            i1[t][q] = vdupq_n_s32(-32 * s1);
          }
        }
        int8x16_t lo[Q], hi[Q];
#define KQ6_CHUNK(k)                                                                           \
  load_q6(codes, k, lo, hi);                                                                   \
  KILN_UK_UNROLL for (int32_t t = 0; t < T; ++t) {                                             \
    DOT4(i0[t], lo, x0[t], k);                                                                 \
    DOT4(i1[t], hi, x1[t], k);                                                                 \
  }
        KQ6_CHUNK(0) KQ6_CHUNK(1) KQ6_CHUNK(2) KQ6_CHUNK(3)
#undef KQ6_CHUNK
        int32x4_t sc0[Q], sc1[Q];
        kq_s8_lanes(sb + j * 32, sc0);
        kq_s8_lanes(sb + j * 32 + 16, sc1);
        KILN_UK_UNROLL
        for (int32_t t = 0; t < T; ++t)
          for (int32_t q = 0; q < Q; ++q) {
            const int32x4_t isum = vmlaq_s32(vmulq_s32(sc0[q], i0[t][q]), sc1[q], i1[t][q]);
            acc[t][q] = vfmaq_f32(acc[t][q], vcvtq_f32_s32(isum), vmulq_n_f32(d[q], xq[t].d[b]));
          }
      }
      MCA_MARK(format, T, "# LLVM-MCA-END");
    }
  }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t)
    packed_store(a, g, t0 + t, acc[t]);
}

KILN_UK_INLINE void kq_neon_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                   int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    int32_t t = 0;
    for (; t + TT <= a->n; t += TT)
      kq_tile(a, format, g, t, TT);
    if (t < a->n)
      kq_tile(a, format, g, t, 1);
  }
}
#define packed_kquant_groups kq_neon_groups

#endif /* KILN_CODEGEN_CPU_UKERNELS_NEON_LINEAR_PACKED_KQUANT_H_ */
