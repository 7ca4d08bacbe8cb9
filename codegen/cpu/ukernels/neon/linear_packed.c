/* kiln micro-kernels, aarch64 NEON: linear over the r16 repacked formats (q4_0_r16,
 * q4_1_r16, q8_0_r16; kiln/quant_packed.h). Overrides generic/linear_packed.c; same
 * arithmetic, same float operations (so the same results, bit for bit, as the generic file
 * compiled by clang for aarch64). The r32 formats (Hexagon's) run packed_generic_groups;
 * the K-quants q4_K_r16 and q6_K_r16 run the same tiles in linear_packed_kquant.h.
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
 * With i8mm (the aarch64-i8mm variant), prefill runs tiles of 16 rows x 4 tokens on
 * `usmmla` (a 2x8 u8 by 8x2 s8 product into a 2x2 int32 tile); decode and the 1-3 tokens
 * left over stay on the sdot tiles. Lane r of chunks k and k + 1 is 8 weights of row r, so
 * a 32-bit zip of the same slice of both chunks is a two-row operand, decoded once for 2
 * token pairs: half the multiply instructions of sdot and no xor (the codes go in unsigned
 * as stored; the int32 sums start at the offset, -128 or -8 times sum(x), as exact as the
 * generic file's subtraction). The two-token activation operands (8 elements of token t
 * beside the same 8 of t + 1) are made once per call (mm_interleave rewrites the 4-token
 * rows of the scratch in place), not by 64-bit zips in every group's tile. At 2 tokens a
 * tile would gain nothing over sdot (the weight zips cancel it); 16 rows x 4 tokens of
 * int32 sums and float accumulators are the 32 registers, so some accumulators spill, still
 * fewer instructions than 8-row tiles, which repeat the per-block scale and pointer work
 * (docs/perf.md, "i8mm usmmla prefill tiles"). After the int32 sums, the float steps per
 * (row, token) are the sdot tile's, in the usmmla result's lane order, so y is the same bit
 * for bit.
 */
#include <arm_neon.h>

#include "packed_common.h"
#include "ukernel_abi.h"

#define GROUP_ROWS 16 /* r16 groups */

#if !defined(__ARM_FEATURE_DOTPROD)
#error "neon/linear_packed.c needs the dot-product extension (-march=armv8.2-a+dotprod)"
#endif

/* Markers in the block loop of one tile shape (codegen/targets/KernelCostTable.cmake
 * compiles this file to assembly with -DKILN_UK_MCA_FORMAT=<id> -DKILN_UK_MCA_T=<tokens> and
 * times the whole loop around them); in every other build they do not exist. */
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

/* 4 fp16 at p (any alignment) as floats: exact, as kiln_uk_fp16_to_fp32 */
KILN_UK_INLINE float32x4_t halves4(const uint8_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p)));
}

/* The one place a tile's results reach y: the group's 16 rows for one token. */
KILN_UK_INLINE void packed_store(const packed_args_t *a, int64_t g, int32_t t,
                                 const float32x4_t acc[Q]) {
  const int64_t r0 = g * GROUP_ROWS;
  const int32_t count = (int32_t)KILN_UK_MIN((int64_t)GROUP_ROWS, a->out_features - r0);
  float v[GROUP_ROWS];
  for (int32_t q = 0; q < Q; ++q)
    vst1q_f32(v + 4 * q, acc[q]);
  if (a->mode != KILN_UK_STORE_PLAIN) {
    packed_store_fused(a, t, r0, v, count);
    return;
  }
  float *y = a->y + (int64_t)t * a->out_features + r0;
  if (count == GROUP_ROWS) {
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
  KILN_UK_UNROLL
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
    KILN_UK_UNROLL
    for (int32_t t = 0; t < T; ++t) {
      const int8_t *xb = xq[t].q + b * KILN_PACK_BLOCK;
      x0[t] = vld1q_s8(xb);
      x1[t] = vld1q_s8(xb + 16);
      /* q4_0's codes are c = q + 8: its sums start at the stored -8 * sum(x) (one
       * load-and-replicate; exact in int32 either way); q8 is unbiased above */
      const int32x4_t s0 =
          format == KILN_TYPE_Q4_0_R16 ? vld1q_dup_s32(xq[t].o + b) : vdupq_n_s32(0);
      for (int32_t q = 0; q < Q; ++q)
        s[t][q] = s0;
    }
    if (format == KILN_TYPE_Q8_0_R16) {
      int8x16_t w[Q];
#define Q8_CHUNK(k, xv, L)                                                                     \
  load_q8(codes, k, w);                                                                        \
  KILN_UK_UNROLL for (int32_t t = 0; t < T; ++t) DOT4(s[t], w, xv[t], L);
      Q8_CHUNK(0, x0, 0) Q8_CHUNK(1, x0, 1) Q8_CHUNK(2, x0, 2) Q8_CHUNK(3, x0, 3)
      Q8_CHUNK(4, x1, 0) Q8_CHUNK(5, x1, 1) Q8_CHUNK(6, x1, 2) Q8_CHUNK(7, x1, 3)
#undef Q8_CHUNK
    } else {
      int8x16_t lo[Q], hi[Q];
#define Q4_CHUNK(k)                                                                            \
  load_q4(codes, k, lo, hi);                                                                   \
  KILN_UK_UNROLL for (int32_t t = 0; t < T; ++t) {                                             \
    DOT4(s[t], lo, x0[t], k);                                                                  \
    DOT4(s[t], hi, x1[t], k);                                                                  \
  }
      Q4_CHUNK(0) Q4_CHUNK(1) Q4_CHUNK(2) Q4_CHUNK(3)
#undef Q4_CHUNK
    }
    float32x4_t dw[Q];
    for (int32_t q = 0; q < Q; ++q)
      dw[q] = halves4(scales + 8 * q);
    KILN_UK_UNROLL
    for (int32_t t = 0; t < T; ++t) {
      for (int32_t q = 0; q < Q; ++q) {
        const float32x4_t isum = vcvtq_f32_s32(s[t][q]);
        acc[t][q] = vfmaq_f32(acc[t][q], isum, vmulq_n_f32(dw[q], xq[t].d[b]));
        if (format == KILN_TYPE_Q4_1_R16) /* + m * d_x * sum(x) */
          acc[t][q] = vfmaq_f32(acc[t][q], halves4(scales + 32 + 8 * q), vdupq_n_f32(xq[t].ds[b]));
      }
    }
    MCA_MARK(format, T, "# LLVM-MCA-END");
  }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t)
    packed_store(a, g, t0 + t, acc[t]);
}

#if defined(__ARM_FEATURE_MATMUL_INT8)
#define MT 4 /* tokens per usmmla tile */

/* [v0, v0, v1, v1] for the halves of a row pair: lane order of a usmmla result */
KILN_UK_INLINE float32x4_t rows_lo(float32x4_t v) { return vzip1q_f32(v, v); }
KILN_UK_INLINE float32x4_t rows_hi(float32x4_t v) { return vzip2q_f32(v, v); }

/* s[2q], s[2q + 1] += slice q of chunks k, k + 1 (rows 4q..4q+3, zipped into two row-pair
 * operands) . activation operands x0 (tokens 0, 1) and x1 (tokens 2, 3) */
#define MM_SLICE(s, w, x0, x1, q, DECODE)                                                      \
  do {                                                                                         \
    const uint8x16_t lo_ = DECODE(vreinterpretq_u8_u32(vzip1q_u32(w##k[q], w##k1[q])));        \
    const uint8x16_t hi_ = DECODE(vreinterpretq_u8_u32(vzip2q_u32(w##k[q], w##k1[q])));        \
    (s)[0][2 * (q)] = vusmmlaq_s32((s)[0][2 * (q)], lo_, x0);                                  \
    (s)[1][2 * (q)] = vusmmlaq_s32((s)[1][2 * (q)], lo_, x1);                                  \
    (s)[0][2 * (q) + 1] = vusmmlaq_s32((s)[0][2 * (q) + 1], hi_, x0);                          \
    (s)[1][2 * (q) + 1] = vusmmlaq_s32((s)[1][2 * (q) + 1], hi_, x1);                          \
  } while (0)
#define AS_IS(v) (v)
#define LOW4(v) vandq_u8(v, vdupq_n_u8(15))
#define HIGH4(v) vshrq_n_u8(v, 4)

/* Rows of group g for tokens t0..t0+3. s[j][i] holds [row 2i . token 2j, row 2i . token
 * 2j+1, row 2i+1 . token 2j, row 2i+1 . token 2j+1]. */
KILN_UK_INLINE void mm_tile(const packed_args_t *a, uint32_t format, int64_t g, int32_t t0) {
  const uint8_t *grp = a->w + g * a->group_stride;
  qact_t xq[MT];
  for (int32_t t = 0; t < MT; ++t)
    xq[t] = packed_qact(a, t0 + t);
  float32x4_t acc[2][8];
  for (int32_t j = 0; j < 2; ++j)
    for (int32_t i = 0; i < 8; ++i)
      acc[j][i] = vdupq_n_f32(0.0f);
  const int32_t ub = (int32_t)kiln_packed_unit_blocks(format);
  const int64_t cb = (int64_t)kiln_packed_code_bytes(format);
  const int64_t unit_bytes = (int64_t)kiln_packed_unit_bytes(format);
  /* the sums start at the codes' offset, -k * sum(x) (exact int32 either way): the weight
   * codes go in unsigned as stored, q8's biased by 128, q4_0's by 8 */
  const int32_t k = format == KILN_TYPE_Q8_0_R16 ? 128 : format == KILN_TYPE_Q4_0_R16 ? 8 : 0;
  const uint8_t *unit = grp;
  for (int32_t b = 0, u = 0; b < a->nb; ++b) {
    MCA_MARK(format, MT, "# LLVM-MCA-BEGIN block");
    const uint8_t *codes = unit + 64 + u * cb;
    const uint8_t *scales = unit + u * 32;
    if (++u == ub) {
      u = 0;
      unit += unit_bytes;
    }
    /* X(j, p): [token 2j | token 2j+1] elements 8p..8p+7, as mm_interleave left them */
    const int8_t *xs[2] = {xq[0].q + b * KILN_PACK_BLOCK, xq[2].q + b * KILN_PACK_BLOCK};
#define X(j, p) vld1q_s8(xs[j] + ((p) >> 1) * a->qx_stride + 16 * ((p) & 1))
    /* per-token values of the block as [token 0, 1, 0, 1] and [2, 3, 2, 3] */
    const int32x4_t s4 = {xq[0].s[b], xq[1].s[b], xq[2].s[b], xq[3].s[b]};
    const int32x4_t off4 = vmulq_n_s32(s4, -k);
    const int32x4_t off[2] = {vcombine_s32(vget_low_s32(off4), vget_low_s32(off4)),
                              vcombine_s32(vget_high_s32(off4), vget_high_s32(off4))};
    int32x4_t s[2][8];
    for (int32_t j = 0; j < 2; ++j)
      for (int32_t i = 0; i < 8; ++i)
        s[j][i] = off[j];
    /* chunks k, k + 1: lane r of each is 4 weights of row r; a 32-bit zip of the same
     * slice of both is two rows' 8 weights */
    uint32x4_t wk[4], wk1[4];
    if (format == KILN_TYPE_Q8_0_R16) {
      KILN_UK_UNROLL
      for (int32_t p = 0; p < 4; ++p) {
        const int8x16_t x0 = X(0, p), x1 = X(1, p);
        for (int32_t q = 0; q < 4; ++q) {
          wk[q] = vreinterpretq_u32_u8(vld1q_u8(codes + 128 * p + 16 * q));
          wk1[q] = vreinterpretq_u32_u8(vld1q_u8(codes + 128 * p + 64 + 16 * q));
          MM_SLICE(s, w, x0, x1, q, AS_IS);
        }
      }
    } else {
      /* chunks 2p, 2p + 1: low nibbles are elements 8p.., high nibbles 16 + 8p.. */
      KILN_UK_UNROLL
      for (int32_t p = 0; p < 2; ++p) {
        const int8x16_t x0 = X(0, p), x1 = X(1, p);
        const int8x16_t y0 = X(0, p + 2), y1 = X(1, p + 2);
        for (int32_t q = 0; q < 4; ++q) {
          wk[q] = vreinterpretq_u32_u8(vld1q_u8(codes + 128 * p + 16 * q));
          wk1[q] = vreinterpretq_u32_u8(vld1q_u8(codes + 128 * p + 64 + 16 * q));
          MM_SLICE(s, w, x0, x1, q, LOW4);
          MM_SLICE(s, w, y0, y1, q, HIGH4);
        }
      }
    }
#undef X
    /* the sdot tile's float steps per (row, token), in the usmmla lane order */
    const float32x4_t d4 = {xq[0].d[b], xq[1].d[b], xq[2].d[b], xq[3].d[b]};
    const float32x4_t dx[2] = {vcombine_f32(vget_low_f32(d4), vget_low_f32(d4)),
                               vcombine_f32(vget_high_f32(d4), vget_high_f32(d4))};
    float32x4_t dw[8];
    for (int32_t q = 0; q < 4; ++q) {
      const float32x4_t d = halves4(scales + 8 * q);
      dw[2 * q] = rows_lo(d);
      dw[2 * q + 1] = rows_hi(d);
    }
    for (int32_t j = 0; j < 2; ++j)
      for (int32_t i = 0; i < 8; ++i)
        acc[j][i] = vfmaq_f32(acc[j][i], vcvtq_f32_s32(s[j][i]), vmulq_f32(dw[i], dx[j]));
    if (format == KILN_TYPE_Q4_1_R16) { /* + m * d_x * sum(x) */
      const float32x4_t ds4 = {xq[0].ds[b], xq[1].ds[b], xq[2].ds[b], xq[3].ds[b]};
      const float32x4_t ds[2] = {vcombine_f32(vget_low_f32(ds4), vget_low_f32(ds4)),
                                 vcombine_f32(vget_high_f32(ds4), vget_high_f32(ds4))};
      for (int32_t q = 0; q < 4; ++q) {
        const float32x4_t m = halves4(scales + 32 + 8 * q);
        for (int32_t j = 0; j < 2; ++j) {
          acc[j][2 * q] = vfmaq_f32(acc[j][2 * q], rows_lo(m), ds[j]);
          acc[j][2 * q + 1] = vfmaq_f32(acc[j][2 * q + 1], rows_hi(m), ds[j]);
        }
      }
    }
    MCA_MARK(format, MT, "# LLVM-MCA-END");
  }
  /* de-interleave: even lanes are token 2j, odd lanes token 2j + 1 */
  for (int32_t j = 0; j < 2; ++j) {
    float32x4_t even[Q], odd[Q];
    for (int32_t q = 0; q < Q; ++q) {
      even[q] = vuzp1q_f32(acc[j][2 * q], acc[j][2 * q + 1]);
      odd[q] = vuzp2q_f32(acc[j][2 * q], acc[j][2 * q + 1]);
    }
    packed_store(a, g, t0 + 2 * j, even);
    packed_store(a, g, t0 + 2 * j + 1, odd);
  }
}

/* Rewrites the codes of tokens t, t + 1 (both in a 4-token tile) block by block into
 * usmmla's activation operands: token t's 32 bytes become [t 0-7 | t+1 0-7 | t 8-15 |
 * t+1 8-15], token t + 1's the same for elements 16-31. Once per call (O(n * in)) instead
 * of once per group. The scales and sums stay per token; tokens past the last whole tile
 * stay as they are for the sdot tiles. r32 matrices and the K-quants (the portable code)
 * read the codes as quantised. */
static void mm_interleave(const packed_args_t *a) {
  if (!kiln_is_packed_r16(a->format) || kiln_is_packed_kquant(a->format))
    return;
  for (int32_t t = 0; t < a->n / MT * MT; t += 2) {
    int8_t *p = (int8_t *)a->qx + (int64_t)t * a->qx_stride;
    int8_t *q = p + a->qx_stride;
    for (int32_t b = 0; b < a->nb; ++b, p += KILN_PACK_BLOCK, q += KILN_PACK_BLOCK) {
      const int64x2_t p0 = vreinterpretq_s64_s8(vld1q_s8(p));
      const int64x2_t p1 = vreinterpretq_s64_s8(vld1q_s8(p + 16));
      const int64x2_t q0 = vreinterpretq_s64_s8(vld1q_s8(q));
      const int64x2_t q1 = vreinterpretq_s64_s8(vld1q_s8(q + 16));
      vst1q_s8(p, vreinterpretq_s8_s64(vzip1q_s64(p0, q0)));
      vst1q_s8(p + 16, vreinterpretq_s8_s64(vzip2q_s64(p0, q0)));
      vst1q_s8(q, vreinterpretq_s8_s64(vzip1q_s64(p1, q1)));
      vst1q_s8(q + 16, vreinterpretq_s8_s64(vzip2q_s64(p1, q1)));
    }
  }
}
#define packed_after_quantize(a) mm_interleave(a)
#endif

KILN_UK_INLINE void packed_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                  int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    int32_t t = 0;
#if defined(__ARM_FEATURE_MATMUL_INT8)
    for (; t + MT <= a->n; t += MT)
      mm_tile(a, format, g, t);
#endif
    for (; t + TT <= a->n; t += TT)
      tile(a, format, g, t, TT);
    if (t < a->n)
      tile(a, format, g, t, 1);
  }
}

#include "linear_packed_kquant.h"
#include "linear_packed_entry.h"
