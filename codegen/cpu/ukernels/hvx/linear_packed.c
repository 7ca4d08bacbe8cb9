/* kiln micro-kernels, Hexagon HVX (128-byte vectors, v67 and later): linear over the
 * repacked formats (kiln/quant_packed.h). Overrides generic/linear_packed.c: q4_0 and q8_0
 * in 32-row groups (r32, the layout kiln compile gives HVX targets) and in 16-row groups
 * (r16) run on HVX, and so do q4_1 (both, with the portable code's float steps: below) and
 * q4_K, q5_K and q6_K in r16 groups (linear_packed_kquant.h).
 *
 * r32: a block's code chunk is one aligned 128-byte vector whose word lane r is 4
 * consecutive weights of row r, so one vrmpy with the chunk's 4 activation bytes as the
 * scalar operand gives all 32 rows' partial sums; the block's 32 fp16 scales are half of
 * the unit's 128-byte header, put in lane order by one vzxt + vshuff per unit. Every lane
 * of every vrmpy is useful, and no vmux, vdeal or realigning valign is needed (r32 matrices
 * start on a 128-byte boundary and every chunk and header is 128 bytes).
 *
 * r16 (below the r32 code; what --layout r16 gives a Hexagon target, and what K-quant
 * rows get on every target: their steps are in linear_packed_kquant.h):
 * x is quantised by packed_prepare (packed_common.h, the same int8 blocks on every ISA).
 * A block's codes are 64-byte chunks whose word lane r is 4 consecutive weights of row r,
 * so one 128-byte vector holds chunks k (lanes 0-15) and k + 1 (lanes 16-31), and
 * vrmpy with the 4 activation bytes of a chunk as a scalar operand gives 16 rows' partial
 * dot products at once: two vrmpy per vector and nibble half (one for each chunk's x
 * word), into one accumulator whose low half is right for chunk k and one whose high half
 * is right for k + 1. No gathering (the ggml-layout kernel spends most of its packets
 * there). The codes' offset (-8 * sum(q_x) for q4_0, -128 * sum(q_x) for q8_0's +128 bias)
 * starts the accumulator. A unit's two blocks go into one vector (vdeal by 64 bytes + add:
 * lanes 0-15 block 2u, 16-31 block 2u + 1, the order of the unit's 32 fp16 scales), and
 * hvx_scaled_sums applies the scales; one scalar FMA by d_x per (row, block) is left.
 * Results equal the generic kernel's int8 math up to float rounding (the scale product
 * rounds once, in a different order); tests/emu/hexagon/ukernel_diff.c checks both.
 *
 * Groups are 64-byte aligned (the layout's unit), vectors need 128: codes are loaded with
 * hvx_load_safe, which reads only aligned vectors holding bytes it needs.
 */
#include "hvx_common.h"

#include "packed_common.h"
#include "ukernel_abi.h"

#define ROWS 16    /* r16 groups */
#define R32_ROWS 32

typedef float hvxp_f2_t __attribute__((vector_size(8))); /* two floats, one 64-bit load */

/* Block b's 32 row sums (int32, exact): 8 vrmpy for q8_0, 8 for q4_0's and q4_1's two nibble
 * halves (q4_0's offset -8 * s included). */
KILN_UK_INLINE HVX_Vector hvxp_r32_block(const uint8_t *grp, uint32_t format, const qact_t *xq,
                                         int32_t b) {
  const HVX_Vector *codes =
      (const HVX_Vector *)(grp + kiln_packed_codes_offset(format, (uint64_t)b));
  const int32_t *xw = (const int32_t *)(xq->q + b * KILN_PACK_BLOCK);
  if (format == KILN_TYPE_Q8_0_R32) {
    HVX_Vector isum = Q6_V_vsplat_R(-128 * xq->s[b]);
    for (int32_t k = 0; k < 8; ++k)
      isum = Q6_Vw_vrmpyacc_VwVubRb(isum, codes[k], xw[k]);
    return isum;
  }
  const HVX_Vector low4 = Q6_Vb_vsplat_R(0x0f);
  HVX_Vector lo = Q6_V_vsplat_R(format == KILN_TYPE_Q4_1_R32 ? 0 : -8 * xq->s[b]);
  HVX_Vector hi = Q6_V_vzero();
  for (int32_t k = 0; k < 4; ++k) { /* high nibbles are element + 16 */
    const HVX_Vector c = codes[k];
    lo = Q6_Vw_vrmpyacc_VwVubRb(lo, Q6_V_vand_VV(c, low4), xw[k]);
    hi = Q6_Vw_vrmpyacc_VwVubRb(hi, Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(c, 4), low4), xw[4 + k]);
  }
  return Q6_Vw_vadd_VwVw(lo, hi);
}

/* The unit header at block b as words in order: q4_0/q8_0 (b even) block b's 32 scales in the
 * low vector, b + 1's in the high one; q4_1 block b's d, then its m. */
KILN_UK_INLINE HVX_VectorPair hvxp_r32_scales(const uint8_t *grp, uint32_t format, int32_t b) {
  return hvx_halves_words(
      *(const HVX_Vector *)(grp + kiln_packed_scales_offset(format, (uint64_t)b)));
}

#define R32_CHUNK 32 /* blocks per pass (even: whole units): 4 KiB of scaled sums on the stack */

/* y for r32 group g and token t, in two passes per chunk of blocks: the vector pass turns
 * every block's sums into scaled floats (independent blocks, so the compiler can overlap
 * them), then the scalar pass accumulates two rows at a time over the chunk's blocks with
 * the accumulators in registers (32 of them across the block loop would not fit in
 * Hexagon's 32 registers). Per (row, block) the float steps are the r16 path's:
 * hvx_scaled_sums of the same int32 sum and scale, then acc += p * d_x in block order, so
 * both layouts give the same results bit for bit. */
KILN_UK_INLINE void hvxp_r32_group_token(const packed_args_t *a, uint32_t format, int64_t g,
                                         int32_t t) {
  const uint8_t *grp = a->w + g * a->group_stride;
  const qact_t xq = packed_qact(a, t);
  float acc[R32_ROWS];
  for (int32_t r = 0; r < R32_ROWS; ++r)
    acc[r] = 0.0f;
  union {
    HVX_Vector v[R32_CHUNK];
    float f[R32_CHUNK][R32_ROWS];
  } p;
  for (int32_t b0 = 0; b0 < a->nb; b0 += R32_CHUNK) {
    const int32_t nc = KILN_UK_MIN(R32_CHUNK, a->nb - b0);
    /* a unit (two blocks) per iteration, with no branch inside: the two blocks' serial
     * hvx_scaled_sums chains then share packets (with the second behind a branch the
     * compiler scheduled them one after the other: 78 packets per unit for q8_0) */
    int32_t i = 0;
    for (; i + 1 < nc; i += 2) {
      const HVX_VectorPair h = hvxp_r32_scales(grp, format, b0 + i);
      const HVX_Vector s0 = hvxp_r32_block(grp, format, &xq, b0 + i);
      const HVX_Vector s1 = hvxp_r32_block(grp, format, &xq, b0 + i + 1);
      p.v[i] = hvx_scaled_sums(s0, Q6_V_lo_W(h));
      p.v[i + 1] = hvx_scaled_sums(s1, Q6_V_hi_W(h));
    }
    if (i < nc) /* an odd last block: a unit of one */
      p.v[i] = hvx_scaled_sums(hvxp_r32_block(grp, format, &xq, b0 + i),
                               Q6_V_lo_W(hvxp_r32_scales(grp, format, b0 + i)));
    const float *d = xq.d + b0;
    for (int32_t r = 0; r < R32_ROWS; r += 2) {
      float a0 = acc[r], a1 = acc[r + 1];
      for (int32_t i = 0; i < nc; ++i) {
        const hvxp_f2_t v = *(const hvxp_f2_t *)&p.f[i][r];
        a0 += v[0] * d[i];
        a1 += v[1] * d[i];
      }
      acc[r] = a0, acc[r + 1] = a1;
    }
  }
  packed_store_rows(a, t, g * R32_ROWS, acc, R32_ROWS);
}

/* Block b's 16 dot products in lanes 0-15 (the low half + the high half of the result):
 * codes at `codes`, the token's x codes of the block as 8 words. */
KILN_UK_INLINE HVX_Vector hvxp_block(uint32_t format, const uint8_t *codes, const int32_t *xw,
                                     int32_t offset) {
  HVX_Vector lo = Q6_V_vsplat_R(-offset), hi = Q6_V_vzero();
  if (format == KILN_TYPE_Q8_0_R16) {
    for (int32_t v = 0; v < 4; ++v) { /* chunks 2v, 2v + 1: elements 8v .. 8v + 7 */
      const HVX_Vector c = hvx_load_safe(codes + 128 * v, codes + 128 * v + 127);
      lo = Q6_Vw_vrmpyacc_VwVubRb(lo, c, xw[2 * v]);
      hi = Q6_Vw_vrmpyacc_VwVubRb(hi, c, xw[2 * v + 1]);
    }
  } else {
    const HVX_Vector low4 = Q6_Vb_vsplat_R(0x0f);
    for (int32_t v = 0; v < 2; ++v) { /* chunks 2v, 2v + 1; high nibbles are element + 16 */
      const HVX_Vector c = hvx_load_safe(codes + 128 * v, codes + 128 * v + 127);
      const HVX_Vector cl = Q6_V_vand_VV(c, low4);
      const HVX_Vector ch = Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(c, 4), low4);
      lo = Q6_Vw_vrmpyacc_VwVubRb(lo, cl, xw[2 * v]);
      lo = Q6_Vw_vrmpyacc_VwVubRb(lo, ch, xw[4 + 2 * v]);
      hi = Q6_Vw_vrmpyacc_VwVubRb(hi, cl, xw[2 * v + 1]);
      hi = Q6_Vw_vrmpyacc_VwVubRb(hi, ch, xw[4 + 2 * v + 1]);
    }
  }
  /* lanes 0-15 from lo, 16-31 from hi: the sum of the two halves is the block's result */
  return Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), lo, hi);
}

/* y for r16 group g and token t. */
KILN_UK_INLINE void hvxp_group_token(const packed_args_t *a, uint32_t format, int64_t g,
                                     int32_t t) {
  const uint8_t *grp = a->w + g * a->group_stride;
  const qact_t xq = packed_qact(a, t);
  const int32_t mul = format == KILN_TYPE_Q8_0_R16 ? 128 : 8;
  float acc[ROWS];
  for (int32_t r = 0; r < ROWS; ++r)
    acc[r] = 0.0f;
  for (int32_t b = 0; b < a->nb; b += 2) {
    const int32_t two = b + 1 < a->nb;
    const uint8_t *hdr = grp + kiln_packed_scales_offset(format, (uint64_t)b);
    const HVX_Vector t0 =
        hvxp_block(format, grp + kiln_packed_codes_offset(format, (uint64_t)b),
                   (const int32_t *)(xq.q + b * KILN_PACK_BLOCK), mul * xq.s[b]);
    const HVX_Vector t1 =
        two ? hvxp_block(format, grp + kiln_packed_codes_offset(format, (uint64_t)b + 1),
                         (const int32_t *)(xq.q + (b + 1) * KILN_PACK_BLOCK), mul * xq.s[b + 1])
            : Q6_V_vzero();
    /* [t0 lanes 0-15 | t1 lanes 0-15] + [t0 lanes 16-31 | t1 lanes 16-31] */
    const HVX_VectorPair d = Q6_W_vdeal_VVR(t1, t0, -64);
    const HVX_Vector isum = Q6_Vw_vadd_VwVw(Q6_V_lo_W(d), Q6_V_hi_W(d));
    /* the unit's 32 fp16 scales as words in order: zero-extend (even/odd halves), then
     * interleave back; a unit with one block has 16 (the rest is multiplied by zero) */
    const HVX_Vector h = Q6_V_lo_W(hvx_halves_words(hvx_load_safe(hdr, hdr + (two ? 63 : 31))));
    union {
      HVX_Vector v;
      float f[32];
    } p;
    p.v = hvx_scaled_sums(isum, h);
    /* float pairs: one 64-bit load for two FMAs */
    const hvxp_f2_t *pp = (const hvxp_f2_t *)p.f;
    const float d0 = xq.d[b], d1 = two ? xq.d[b + 1] : 0.0f;
    for (int32_t r = 0; r < ROWS; r += 2) {
      const hvxp_f2_t v = pp[r / 2];
      acc[r] += v[0] * d0;
      acc[r + 1] += v[1] * d0;
    }
    if (two)
      for (int32_t r = 0; r < ROWS; r += 2) {
        const hvxp_f2_t v = pp[(ROWS + r) / 2];
        acc[r] += v[0] * d1;
        acc[r + 1] += v[1] * d1;
      }
  }
  packed_store_rows(a, t, g * ROWS, acc, ROWS);
}

/* Two r16 blocks' sums in one vector: lanes 0-15 the first's 16 rows, 16-31 the second's
 * (hvxp_block leaves a row's sum split over lanes r and 16 + r). */
KILN_UK_INLINE HVX_Vector hvxp_pair(HVX_Vector t0, HVX_Vector t1) {
  const HVX_VectorPair d = Q6_W_vdeal_VVR(t1, t0, -64);
  return Q6_Vw_vadd_VwVw(Q6_V_lo_W(d), Q6_V_hi_W(d));
}

#include "linear_packed_kquant.h"

/* q4_1, r16 and r32: the sums as above with no code offset, then the portable code's float
 * steps (packed_common.h) on floats made exactly in integer lanes (the sums, d_w and m_w),
 * as the K-quants do: the portable code's bits. A vector pass over a chunk of blocks, then a
 * scalar pass with two rows' accumulators in registers; block i, row r at float R * i + r. */
#define Q41_CHUNK 8 /* blocks per pass: 3 KiB of floats on the stack */

/* A q4_1 unit header's d (lanes 0-15) and m (16-31) of r16 block b as words */
KILN_UK_INLINE HVX_Vector hvxp_q41_header16(const uint8_t *grp, int64_t b) {
  const uint8_t *h = grp + kiln_packed_scales_offset(KILN_TYPE_Q4_1_R16, (uint64_t)b);
  return Q6_V_lo_W(hvx_halves_words(hvx_load_safe(h, h + 63)));
}

KILN_UK_INLINE void hvxp_q41_group_token(const packed_args_t *a, uint32_t format, int64_t g,
                                         int32_t t) {
  const int32_t R = kiln_is_packed_r32(format) ? R32_ROWS : ROWS;
  const uint8_t *grp = a->w + g * a->group_stride;
  const qact_t xq = packed_qact(a, t);
  const HVX_Vector one = Q6_V_vsplat_R(1);
  float acc[R32_ROWS];
  for (int32_t r = 0; r < R; ++r)
    acc[r] = 0.0f;
  union {
    HVX_Vector v[Q41_CHUNK];
    float f[Q41_CHUNK * 32];
  } is, dw, mw;
  for (int32_t b0 = 0; b0 < a->nb; b0 += Q41_CHUNK) {
    const int32_t nc = KILN_UK_MIN(Q41_CHUNK, a->nb - b0);
    if (R == R32_ROWS) {
      for (int32_t i = 0; i < nc; ++i) {
        const int32_t b = b0 + i;
        is.v[i] = hvx_int_floats(hvxp_r32_block(grp, format, &xq, b));
        /* the 128-byte header: 32 d, then 32 m */
        const HVX_VectorPair h = hvxp_r32_scales(grp, format, b);
        dw.v[i] = hvx_half_times(one, hvx_half(Q6_V_lo_W(h)), 0);
        mw.v[i] = hvx_half_times(one, hvx_half(Q6_V_hi_W(h)), 0);
      }
    } else {
      for (int32_t i = 0; i < nc; i += 2) { /* two blocks a vector; a last odd one alone */
        const int32_t b = b0 + i, two = i + 1 < nc;
        const HVX_Vector t0 =
            hvxp_block(format, grp + kiln_packed_codes_offset(format, (uint64_t)b),
                       (const int32_t *)(xq.q + b * KILN_PACK_BLOCK), 0);
        const HVX_Vector t1 =
            two ? hvxp_block(format, grp + kiln_packed_codes_offset(format, (uint64_t)b + 1),
                             (const int32_t *)(xq.q + (b + 1) * KILN_PACK_BLOCK), 0)
                : Q6_V_vzero();
        is.v[i / 2] = hvx_int_floats(hvxp_pair(t0, t1));
        const HVX_Vector h0 = hvxp_q41_header16(grp, b);
        const HVX_VectorPair h = Q6_W_vdeal_VVR(two ? hvxp_q41_header16(grp, b + 1) : h0, h0, -64);
        dw.v[i / 2] = hvx_half_times(one, hvx_half(Q6_V_lo_W(h)), 0);
        mw.v[i / 2] = hvx_half_times(one, hvx_half(Q6_V_hi_W(h)), 0);
      }
    }
    const float *d = xq.d + b0, *ds = xq.ds + b0;
    for (int32_t r = 0; r < R; r += 2) {
      float a0 = acc[r], a1 = acc[r + 1];
      for (int32_t i = 0; i < nc; ++i) {
        const hvxp_f2_t s = *(const hvxp_f2_t *)&is.f[R * i + r];
        const hvxp_f2_t w = *(const hvxp_f2_t *)&dw.f[R * i + r];
        const hvxp_f2_t m = *(const hvxp_f2_t *)&mw.f[R * i + r];
        a0 += s[0] * (w[0] * d[i]);
        a0 += m[0] * ds[i];
        a1 += s[1] * (w[1] * d[i]);
        a1 += m[1] * ds[i];
      }
      acc[r] = a0, acc[r + 1] = a1;
    }
  }
  packed_store_rows(a, t, g * R, acc, R);
}

/* Groups g0..g1 (`format` is a constant in each caller). */
KILN_UK_INLINE void hvxp_groups(const packed_args_t *a, uint32_t format, int64_t g0, int64_t g1) {
  if (kiln_is_packed_kquant(format)) {
    hkq_groups(a, format, g0, g1);
    return;
  }
  for (int64_t g = g0; g < g1; ++g)
    for (int32_t t = 0; t < a->n; ++t) {
      if (kiln_packed_base_type(format) == KILN_GGML_TYPE_Q4_1)
        hvxp_q41_group_token(a, format, g, t);
      else if (kiln_is_packed_r32(format))
        hvxp_r32_group_token(a, format, g, t);
      else
        hvxp_group_token(a, format, g, t);
    }
}

/* The task's groups in weight shards of a->shard_groups (kiln-size-weight-shards): the first
 * shard starts the fetch of itself and the next, each later one that of the shard after
 * it, so a shard's weights are on their way to L2 a shard's compute ahead (one l2fetch is
 * active per hardware thread: the previous box is done by then, or is cut short). Groups
 * are contiguous, group_stride bytes each. */
KILN_UK_INLINE void packed_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                  int64_t g1) {
  if (a->shard_groups <= 0) {
    hvxp_groups(a, format, g0, g1);
    return;
  }
  const int64_t shard = a->shard_groups;
  for (int64_t s0 = g0; s0 < g1; s0 += shard) {
    const int64_t s1 = KILN_UK_MIN(s0 + shard, g1);
    const int64_t f0 = s0 == g0 ? s0 : s1, f1 = KILN_UK_MIN(s1 + shard, g1);
    hvx_l2fetch(a->w + f0 * a->group_stride, (f1 - f0) * a->group_stride);
    hvxp_groups(a, format, s0, s1);
  }
}
#define packed_groups_r32 packed_groups
#define packed_kquant_groups packed_groups

#include "linear_packed_entry.h"
