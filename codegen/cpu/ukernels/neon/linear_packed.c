/* kiln micro-kernels, aarch64 NEON: linear over the r16 repacked formats (q4_0_r16,
 * q4_1_r16, q8_0_r16; kiln/quant_packed.h). Overrides generic/linear_packed.c; same
 * arithmetic, same float operations (so the same results, bit for bit, as the generic file
 * compiled by clang for aarch64).
 *
 * One 32-bit lane of a 64-byte code chunk is 4 weights of one row, so `sdot` by element
 * (vdotq_laneq_s32: 4 activation bytes of one lane against every lane's 4 weights)
 * accumulates 4 rows per 128-bit register, 16 rows in 4 registers, with no horizontal
 * reduction and no broadcast loads. sdot is s8 x s8: q4 codes (0..15) are non-negative s8
 * as they are; q8_0_r16's biased codes are unbiased back (q ^ 0x80), which makes the
 * -128 * sum(x) correction of the u8 formula unnecessary (the int32 sum is the same).
 * Both nibbles of a q4 chunk accumulate into the same int32 chain (sums are exact, so the
 * order is free).
 *
 * Decode (one token) streams the group's units once; prefill runs tiles of 16 rows x TT
 * tokens, each loaded and decoded chunk reused by the TT tokens (4 int32 and 4 float
 * accumulators per token: TT = 2 keeps weights, activations and accumulators inside the 32
 * vector registers).
 *
 * With i8mm (the aarch64-i8mm variant), prefill runs tiles of 8 rows x 4 tokens on `usmmla`
 * (2x8 u8 by 8x2 s8 into a 2x2 int32 tile) while decode and 1-3 leftover tokens stay on the
 * sdot tiles. Lane r of chunks k and k + 1 is 8 weights of row r, so a 32-bit zip of the
 * two chunks' slices is two rows' operand; the activation operand is two tokens' same 8
 * elements (a 64-bit zip). Weight decode is shared by 2 token pairs, so 4 tokens need half
 * the multiply instructions of sdot per weight byte; at 2 tokens the zips would cancel the
 * gain. 8 rows, not 16: 16 rows x 4 tokens of int32 and float accumulators alone are the
 * 32 registers. The weight codes go in unsigned as stored (q8 takes its -128 * sum(x)
 * offset like the generic file: no xor), and the float steps per (row, token) are the sdot
 * tile's, in the usmmla result's lane order, so y is the same bit for bit.
 */
#include <arm_neon.h>

#include "packed_common.h"
#include "ukernel_abi.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "neon/linear_packed.c needs the dot-product extension (-march=armv8.2-a+dotprod)"
#endif

/* llvm-mca region markers around one block of one tile shape (codegen/targets/KernelCostTable.cmake
 * compiles this file to assembly with -DKILN_UK_MCA_FORMAT=<id> -DKILN_UK_MCA_T=<tokens>);
 * in every other build they do not exist. */
#if defined(KILN_UK_MCA_FORMAT) && defined(KILN_UK_MCA_T)
#define MCA_MARK(format, T, text)                                                              \
  do {                                                                                         \
    if ((format) == KILN_UK_MCA_FORMAT && (T) == KILN_UK_MCA_T)                                \
      __asm__ volatile(text);                                                                  \
  } while (0)
#else
#define MCA_MARK(format, T, text) ((void)0)
#endif

#define TT 2 /* tokens per prefill tile */
#define Q 4  /* int32x4 registers per 16 rows */

#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define UNROLL _Pragma("GCC unroll 8")
#else
#define UNROLL
#endif

/* 4 fp16 at p (any alignment) as floats: exact, as kiln_uk_fp16_to_fp32 */
KILN_UK_INLINE float32x4_t halves4(const uint8_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p)));
}

/* The one place a tile's results reach y: the group's 16 rows for one token. */
KILN_UK_INLINE void packed_store(const packed_args_t *a, int64_t g, int32_t t,
                                 const float32x4_t acc[Q]) {
  const int64_t r0 = g * KILN_PACK_ROWS;
  const int32_t count = (int32_t)KILN_UK_MIN((int64_t)KILN_PACK_ROWS, a->out_features - r0);
  float v[KILN_PACK_ROWS];
  for (int32_t q = 0; q < Q; ++q)
    vst1q_f32(v + 4 * q, acc[q]);
  if (a->mode != KILN_UK_STORE_PLAIN) {
    packed_store_fused(a, t, r0, v, count);
    return;
  }
  float *y = a->y + (int64_t)t * a->out_features + r0;
  if (count == KILN_PACK_ROWS) {
    for (int32_t q = 0; q < Q; ++q)
      vst1q_f32(y + 4 * q, acc[q]);
    return;
  }
  for (int32_t r = 0; r < count; ++r)
    y[r] = v[r];
}

/* s[q] += chunk rows 4q..4q+3 . activation lane L of xv (L a literal: the lane operand of
 * sdot is an immediate) */
#define DOT4(s, w, xv, L)                                                                      \
  do {                                                                                         \
    (s)[0] = vdotq_laneq_s32((s)[0], (w)[0], xv, L);                                           \
    (s)[1] = vdotq_laneq_s32((s)[1], (w)[1], xv, L);                                           \
    (s)[2] = vdotq_laneq_s32((s)[2], (w)[2], xv, L);                                           \
    (s)[3] = vdotq_laneq_s32((s)[3], (w)[3], xv, L);                                           \
  } while (0)

/* q8 chunk k of the block: 16 rows x 4 codes, unbiased to s8 */
KILN_UK_INLINE void load_q8(const uint8_t *codes, int32_t k, int8x16_t w[Q]) {
  const uint8x16_t bias = vdupq_n_u8(0x80);
  for (int32_t q = 0; q < Q; ++q)
    w[q] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(codes + k * 64 + 16 * q), bias));
}

/* q4 chunk k: low nibbles (elements 4k..4k+3) and high nibbles (16 + 4k..) */
KILN_UK_INLINE void load_q4(const uint8_t *codes, int32_t k, int8x16_t lo[Q], int8x16_t hi[Q]) {
  const uint8x16_t low4 = vdupq_n_u8(15);
  for (int32_t q = 0; q < Q; ++q) {
    const uint8x16_t raw = vld1q_u8(codes + k * 64 + 16 * q);
    lo[q] = vreinterpretq_s8_u8(vandq_u8(raw, low4));
    hi[q] = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
  }
}

/* Rows of group g for tokens t0..t0+T-1 (T constant after inlining, <= TT). */
KILN_UK_INLINE void tile(const packed_args_t *a, uint32_t format, int64_t g, int32_t t0,
                         int32_t T) {
  const uint8_t *grp = a->w + g * a->group_stride;
  qact_t xq[TT];
  float32x4_t acc[TT][Q];
  UNROLL
  for (int32_t t = 0; t < T; ++t) {
    xq[t] = packed_qact(a, t0 + t);
    for (int32_t q = 0; q < Q; ++q)
      acc[t][q] = vdupq_n_f32(0.0f);
  }
  /* the weights' units in stream order: the header line, then each block's codes */
  const int32_t ub = (int32_t)kiln_packed_unit_blocks(format);
  const int64_t cb = (int64_t)kiln_packed_code_bytes(format);
  const int64_t unit_bytes = (int64_t)kiln_packed_unit_bytes(format);
  const uint8_t *unit = grp;
  for (int32_t b = 0, j = 0; b < a->nb; ++b) {
    MCA_MARK(format, T, "# LLVM-MCA-BEGIN block");
    const uint8_t *codes = unit + 64 + j * cb;
    const uint8_t *scales = unit + j * 32;
    if (++j == ub) {
      j = 0;
      unit += unit_bytes;
    }
    int32x4_t s[TT][Q];
    int8x16_t x0[TT], x1[TT];
    UNROLL
    for (int32_t t = 0; t < T; ++t) {
      const int8_t *xb = xq[t].q + b * KILN_PACK_BLOCK;
      x0[t] = vld1q_s8(xb);
      x1[t] = vld1q_s8(xb + 16);
      for (int32_t q = 0; q < Q; ++q)
        s[t][q] = vdupq_n_s32(0);
    }
    if (format == KILN_TYPE_Q8_0_R16) {
      int8x16_t w[Q];
#define Q8_CHUNK(k, xv, L)                                                                     \
  load_q8(codes, k, w);                                                                        \
  UNROLL for (int32_t t = 0; t < T; ++t) DOT4(s[t], w, xv[t], L);
      Q8_CHUNK(0, x0, 0) Q8_CHUNK(1, x0, 1) Q8_CHUNK(2, x0, 2) Q8_CHUNK(3, x0, 3)
      Q8_CHUNK(4, x1, 0) Q8_CHUNK(5, x1, 1) Q8_CHUNK(6, x1, 2) Q8_CHUNK(7, x1, 3)
#undef Q8_CHUNK
    } else {
      int8x16_t lo[Q], hi[Q];
#define Q4_CHUNK(k)                                                                            \
  load_q4(codes, k, lo, hi);                                                                   \
  UNROLL for (int32_t t = 0; t < T; ++t) {                                                     \
    DOT4(s[t], lo, x0[t], k);                                                                  \
    DOT4(s[t], hi, x1[t], k);                                                                  \
  }
      Q4_CHUNK(0) Q4_CHUNK(1) Q4_CHUNK(2) Q4_CHUNK(3)
#undef Q4_CHUNK
    }
    float32x4_t dw[Q];
    for (int32_t q = 0; q < Q; ++q)
      dw[q] = halves4(scales + 8 * q);
    UNROLL
    for (int32_t t = 0; t < T; ++t) {
      /* q8 needs no correction (unbiased above); q4_0's codes are c = q + 8 */
      const int32x4_t offset =
          vdupq_n_s32(format == KILN_TYPE_Q4_0_R16 ? 8 * xq[t].s[b] : 0);
      for (int32_t q = 0; q < Q; ++q) {
        const float32x4_t isum = vcvtq_f32_s32(vsubq_s32(s[t][q], offset));
        acc[t][q] = vfmaq_f32(acc[t][q], isum, vmulq_n_f32(dw[q], xq[t].d[b]));
        if (format == KILN_TYPE_Q4_1_R16) /* + m * d_x * sum(x) */
          acc[t][q] = vfmaq_f32(acc[t][q], halves4(scales + 32 + 8 * q), vdupq_n_f32(xq[t].ds[b]));
      }
    }
    MCA_MARK(format, T, "# LLVM-MCA-END");
  }
  UNROLL
  for (int32_t t = 0; t < T; ++t)
    packed_store(a, g, t0 + t, acc[t]);
}

#if defined(__ARM_FEATURE_MATMUL_INT8)
#define MT 4 /* tokens per usmmla tile */
#define MR 8 /* rows per usmmla tile: half a group */

/* Results of an MR-row tile (rows r0.., at most MR) for one token: as packed_store. */
KILN_UK_INLINE void mm_store(const packed_args_t *a, int64_t r0, int32_t t, float32x4_t lo,
                             float32x4_t hi) {
  const int32_t count = (int32_t)KILN_UK_MIN((int64_t)MR, a->out_features - r0);
  float v[MR];
  vst1q_f32(v, lo);
  vst1q_f32(v + 4, hi);
  if (a->mode != KILN_UK_STORE_PLAIN) {
    packed_store_fused(a, t, r0, v, count);
    return;
  }
  float *y = a->y + (int64_t)t * a->out_features + r0;
  if (count == MR) {
    vst1q_f32(y, lo);
    vst1q_f32(y + 4, hi);
    return;
  }
  for (int32_t r = 0; r < count; ++r)
    y[r] = v[r];
}

/* [v0, v0, v1, v1] for the halves of a row pair: lane order of a usmmla result */
KILN_UK_INLINE float32x4_t rows_lo(float32x4_t v) { return vzip1q_f32(v, v); }
KILN_UK_INLINE float32x4_t rows_hi(float32x4_t v) { return vzip2q_f32(v, v); }

/* s[i] += weight pair operands w (rows 2i, 2i+1 of the half) . activation operands x[j] */
#define MM4(s, w0, w1, w2, w3, xv)                                                               do {                                                                                             (s)[0] = vusmmlaq_s32((s)[0], w0, xv);                                                         (s)[1] = vusmmlaq_s32((s)[1], w1, xv);                                                         (s)[2] = vusmmlaq_s32((s)[2], w2, xv);                                                         (s)[3] = vusmmlaq_s32((s)[3], w3, xv);                                                       } while (0)

/* Rows h * 8 .. h * 8 + 7 of group g for tokens t0..t0+3. s[j][i] holds
 * [row 2i . token 2j, row 2i . token 2j+1, row 2i+1 . token 2j, row 2i+1 . token 2j+1]. */
KILN_UK_INLINE void mm_tile(const packed_args_t *a, uint32_t format, int64_t g, int32_t h,
                            int32_t t0) {
  const uint8_t *grp = a->w + g * a->group_stride;
  qact_t xq[MT];
  for (int32_t t = 0; t < MT; ++t)
    xq[t] = packed_qact(a, t0 + t);
  float32x4_t acc[2][4];
  for (int32_t j = 0; j < 2; ++j)
    for (int32_t i = 0; i < 4; ++i)
      acc[j][i] = vdupq_n_f32(0.0f);
  const int32_t ub = (int32_t)kiln_packed_unit_blocks(format);
  const int64_t cb = (int64_t)kiln_packed_code_bytes(format);
  const int64_t unit_bytes = (int64_t)kiln_packed_unit_bytes(format);
  const uint8_t *unit = grp;
  for (int32_t b = 0, u = 0; b < a->nb; ++b) {
    MCA_MARK(format, MT, "# LLVM-MCA-BEGIN block");
    const uint8_t *codes = unit + 64 + u * cb + 32 * h; /* slices 2h, 2h + 1 of each chunk */
    const uint8_t *scales = unit + u * 32 + 16 * h;
    if (++u == ub) {
      u = 0;
      unit += unit_bytes;
    }
    /* x[j][p]: [token 2j | token 2j+1] elements 8p..8p+7 */
    int8x16_t x[2][4];
    for (int32_t j = 0; j < 2; ++j) {
      const int8_t *xa = xq[2 * j].q + b * KILN_PACK_BLOCK;
      const int8_t *xb = xq[2 * j + 1].q + b * KILN_PACK_BLOCK;
      for (int32_t p = 0; p < 4; p += 2) {
        const int64x2_t va = vreinterpretq_s64_s8(vld1q_s8(xa + 8 * p));
        const int64x2_t vb = vreinterpretq_s64_s8(vld1q_s8(xb + 8 * p));
        x[j][p] = vreinterpretq_s8_s64(vzip1q_s64(va, vb));
        x[j][p + 1] = vreinterpretq_s8_s64(vzip2q_s64(va, vb));
      }
    }
    int32x4_t s[2][4];
    for (int32_t j = 0; j < 2; ++j)
      for (int32_t i = 0; i < 4; ++i)
        s[j][i] = vdupq_n_s32(0);
    /* chunks k, k + 1: lane r of each is 4 weights of row r, zipped into 8 per row */
    if (format == KILN_TYPE_Q8_0_R16) {
      UNROLL
      for (int32_t p = 0; p < 4; ++p) {
        const uint8_t *c = codes + 128 * p;
        const uint32x4_t a0 = vreinterpretq_u32_u8(vld1q_u8(c));
        const uint32x4_t a1 = vreinterpretq_u32_u8(vld1q_u8(c + 16));
        const uint32x4_t b0 = vreinterpretq_u32_u8(vld1q_u8(c + 64));
        const uint32x4_t b1 = vreinterpretq_u32_u8(vld1q_u8(c + 80));
        const uint8x16_t w0 = vreinterpretq_u8_u32(vzip1q_u32(a0, b0));
        const uint8x16_t w1 = vreinterpretq_u8_u32(vzip2q_u32(a0, b0));
        const uint8x16_t w2 = vreinterpretq_u8_u32(vzip1q_u32(a1, b1));
        const uint8x16_t w3 = vreinterpretq_u8_u32(vzip2q_u32(a1, b1));
        MM4(s[0], w0, w1, w2, w3, x[0][p]);
        MM4(s[1], w0, w1, w2, w3, x[1][p]);
      }
    } else {
      /* chunks 2p', 2p' + 1: low nibbles are elements 8p'.., high nibbles 16 + 8p'.. */
      const uint8x16_t low4 = vdupq_n_u8(15);
      UNROLL
      for (int32_t p = 0; p < 2; ++p) {
        const uint8_t *c = codes + 128 * p;
        const uint32x4_t a0 = vreinterpretq_u32_u8(vld1q_u8(c));
        const uint32x4_t a1 = vreinterpretq_u32_u8(vld1q_u8(c + 16));
        const uint32x4_t b0 = vreinterpretq_u32_u8(vld1q_u8(c + 64));
        const uint32x4_t b1 = vreinterpretq_u32_u8(vld1q_u8(c + 80));
        const uint8x16_t r0 = vreinterpretq_u8_u32(vzip1q_u32(a0, b0));
        const uint8x16_t r1 = vreinterpretq_u8_u32(vzip2q_u32(a0, b0));
        const uint8x16_t r2 = vreinterpretq_u8_u32(vzip1q_u32(a1, b1));
        const uint8x16_t r3 = vreinterpretq_u8_u32(vzip2q_u32(a1, b1));
        const uint8x16_t l0 = vandq_u8(r0, low4), l1 = vandq_u8(r1, low4);
        const uint8x16_t l2 = vandq_u8(r2, low4), l3 = vandq_u8(r3, low4);
        MM4(s[0], l0, l1, l2, l3, x[0][p]);
        MM4(s[1], l0, l1, l2, l3, x[1][p]);
        const uint8x16_t h0 = vshrq_n_u8(r0, 4), h1 = vshrq_n_u8(r1, 4);
        const uint8x16_t h2 = vshrq_n_u8(r2, 4), h3 = vshrq_n_u8(r3, 4);
        MM4(s[0], h0, h1, h2, h3, x[0][p + 2]);
        MM4(s[1], h0, h1, h2, h3, x[1][p + 2]);
      }
    }
    /* the sdot tile's float steps per (row, token), in the usmmla lane order: the weight
     * codes are u8 as stored, so q8 takes its -128 * sum(x) here (exact int32) */
    const float32x4_t dw[2] = {halves4(scales), halves4(scales + 8)};
    for (int32_t j = 0; j < 2; ++j) {
      const qact_t *xa = &xq[2 * j], *xb = &xq[2 * j + 1];
      const int32_t k = format == KILN_TYPE_Q8_0_R16 ? 128 : format == KILN_TYPE_Q4_0_R16 ? 8 : 0;
      const int32x2_t off2 = {k * xa->s[b], k * xb->s[b]};
      const float32x2_t d2 = {xa->d[b], xb->d[b]};
      const int32x4_t offset = vcombine_s32(off2, off2);
      const float32x4_t dx = vcombine_f32(d2, d2);
      for (int32_t i = 0; i < 4; ++i) {
        const float32x4_t dwi = (i & 1) ? rows_hi(dw[i >> 1]) : rows_lo(dw[i >> 1]);
        const float32x4_t isum = vcvtq_f32_s32(vsubq_s32(s[j][i], offset));
        acc[j][i] = vfmaq_f32(acc[j][i], isum, vmulq_f32(dwi, dx));
      }
      if (format == KILN_TYPE_Q4_1_R16) { /* + m * d_x * sum(x) */
        const float32x2_t ds2 = {xa->ds[b], xb->ds[b]};
        const float32x4_t ds = vcombine_f32(ds2, ds2);
        const float32x4_t m[2] = {halves4(scales + 32), halves4(scales + 40)};
        for (int32_t i = 0; i < 4; ++i) {
          const float32x4_t mi = (i & 1) ? rows_hi(m[i >> 1]) : rows_lo(m[i >> 1]);
          acc[j][i] = vfmaq_f32(acc[j][i], mi, ds);
        }
      }
    }
    MCA_MARK(format, MT, "# LLVM-MCA-END");
  }
  /* de-interleave: even lanes are token 2j, odd lanes token 2j + 1 */
  const int64_t r0 = g * KILN_PACK_ROWS + MR * h;
  for (int32_t j = 0; j < 2; ++j) {
    mm_store(a, r0, t0 + 2 * j, vuzp1q_f32(acc[j][0], acc[j][1]),
             vuzp1q_f32(acc[j][2], acc[j][3]));
    mm_store(a, r0, t0 + 2 * j + 1, vuzp2q_f32(acc[j][0], acc[j][1]),
             vuzp2q_f32(acc[j][2], acc[j][3]));
  }
}
#endif

KILN_UK_INLINE void packed_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                  int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    int32_t t = 0;
#if defined(__ARM_FEATURE_MATMUL_INT8)
    for (; t + MT <= a->n; t += MT) {
      mm_tile(a, format, g, 0, t);
      if (g * KILN_PACK_ROWS + MR < a->out_features) /* the second half holds real rows */
        mm_tile(a, format, g, 1, t);
    }
#endif
    for (; t + TT <= a->n; t += TT)
      tile(a, format, g, t, TT);
    if (t < a->n)
      tile(a, format, g, t, 1);
  }
}

#include "linear_packed_entry.h"
