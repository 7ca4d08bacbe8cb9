/* kiln micro-kernels, Hexagon HVX (128-byte vectors, v67 and later): linear (y = x W^T).
 * Overrides generic/linear.c. q8_0 and q4_0 weights run on HVX integer dot products; every
 * other format (f32, f16, q4_1, q3_0) runs the generic C code, included below.
 *
 * HVX before v68 has no floating point, so the q8_0/q4_0 path works as the r16 kernels do
 * (docs/ukernel-abi.md, linear_packed): x is quantised per token to int8 blocks of 32 with
 * ggml's q8_0 rule (d_x = amax / 127 in fp32, round half to even), each (row, block) dot
 * product is an exact int32 sum from vrmpy (u8 x s8 for q4_0's codes, s8 x s8 for q8_0),
 * q4_0's -8 offset is folded in as -8 * sum(q_x), and block scales are applied in float:
 * y = sum_b (isum_b * d_w,b) * d_x,b (below). The result differs from the fp32 kernels by the
 * activation rounding only (bound: sum_b d_x,b / 2 * sum |w| per output, as linear_packed;
 * tests/emu/hexagon/ukernel_diff.c checks it and the int8 math in double).
 *
 * Layout work: ggml rows interleave a 2-byte fp16 scale with each block's codes (34-byte
 * q8_0 blocks, 18-byte q4_0 blocks). One vector holds the codes of 4 q8_0 blocks (or the
 * 16 code bytes of 8 q4_0 blocks), gathered from three aligned loads by valign (each block
 * shifted to its 32-byte (16-byte) slot) and vmux; no load touches memory past the row's
 * last block (hvx_gather). vrmpy then leaves each block's partial sums in 8 (4)
 * word lanes; a tree of vdeal + vadd over 8 rows reduces them to one vector of
 * (row, block) sums, lane 4r + k (q8_0) or 8r + k (q4_0, rows 0-3 and 4-7 in two vectors).
 * Tiles are 8 rows x up to 4 tokens: the gathered weight vectors serve every token of the
 * tile.
 *
 * Scales (HVX before v68 has no float, and the scalar float slots bound the kernel): the
 * fp16 d_w of each block come out of the same gathered bytes and the same vdeal tree as the
 * sums; isum * (d_w's 11-bit significand) is exact in int32, is rounded once to a float
 * (to nearest even) and scaled by d_w's exponent, all in vector integer operations
 * (hvx_scaled_sums). The scalar code is left with one fused multiply-add per (row, block):
 * y += (isum * d_w) * d_x. Block scales that are inf/NaN are not supported (ggml's
 * quantisers never write them). Measured with tests/emu/hexagon/count_packets.sh.
 *
 * x is quantised into a stack buffer (HVX_XBUF bytes; the ABI gives linear no scratch),
 * once per task and token tile; rows whose quantised x does not fit even one token
 * (in > ~40000 for q4_0) take the generic path. Each output is computed by the same
 * operations whatever the tile or task split, so results do not depend on the thread count.
 */
#include "hvx_common.h"

/* The generic kernel, renamed: the fallback for every format without an HVX path. Its
 * entry points are not emitted (linear_entry.h is included once, at the end). */
#define linear_rows generic_linear_rows
#define KILN_CODEGEN_CPU_UKERNELS_LINEAR_ENTRY_H_
#include "generic/linear.c"
#undef linear_rows
#undef KILN_CODEGEN_CPU_UKERNELS_LINEAR_ENTRY_H_

#define HVX_ROWS 8
#define HVX_MAX_TT 4
#define HVX_XBUF (64 * 1024)
#define HVX_Q8_GROUP 4 /* q8_0 blocks per vector */
#define HVX_Q4_GROUP 8 /* q4_0 blocks per vector */

/* One token's quantised x: the code vectors of every group (q8_0: 128 bytes per group of
 * 4 blocks; q4_0: 384 per group of 8 blocks: low halves, high halves, and the -8 * sum
 * correction lanes), then the groups' scales d_x (fp32, one per block). */
KILN_UK_INLINE int32_t hvx_group_vec_bytes(uint32_t format) {
  return format == KILN_GGML_TYPE_Q8_0 ? 128 : 384;
}
KILN_UK_INLINE int32_t hvx_group_blocks(uint32_t format) {
  return format == KILN_GGML_TYPE_Q8_0 ? HVX_Q8_GROUP : HVX_Q4_GROUP;
}
KILN_UK_INLINE int32_t hvx_groups(uint32_t format, int32_t in) {
  const int32_t nb = (in + 31) / 32, gb = hvx_group_blocks(format);
  return (nb + gb - 1) / gb;
}
KILN_UK_INLINE int64_t hvx_token_bytes(uint32_t format, int32_t in) {
  const int64_t groups = hvx_groups(format, in);
  return (groups * (hvx_group_vec_bytes(format) + 4 * hvx_group_blocks(format)) + 127) &
         ~(int64_t)127;
}

/* One block of x quantised with ggml's q8_0 rule, exactly packed_quantize_row's
 * operations (packed_common.h): codes to q[0..32) (zero past count), returns d_x. */
KILN_UK_INLINE float hvx_quantize_block(const float *x, int32_t count, int8_t *q, int32_t *sum) {
  float amax = 0.0f;
  for (int32_t j = 0; j < count; ++j) {
    const float v = x[j] < 0.0f ? -x[j] : x[j];
    amax = v > amax ? v : amax;
  }
  const float db = amax / 127.0f;
  const float id = db != 0.0f ? 1.0f / db : 0.0f;
  int32_t s = 0;
  for (int32_t j = 0; j < 32; ++j) {
    const float v = j < count ? x[j] * id : 0.0f;
    const float r = (v + 12582912.0f) - 12582912.0f; /* round half to even, as there */
    const int32_t qi = (int32_t)r;
    q[j] = (int8_t)qi;
    s += qi;
  }
  *sum = s;
  return db;
}

/* Quantises one token's x into dst (hvx_token_bytes, 128-byte aligned) in the group layout
 * the kernels read. */
KILN_UK_INLINE void hvx_quantize_token(uint32_t format, const float *x, int32_t in,
                                       uint8_t *dst) {
  const int32_t nb = (in + 31) / 32, gb = hvx_group_blocks(format);
  const int32_t groups = hvx_groups(format, in), vb = hvx_group_vec_bytes(format);
  for (int32_t g = 0; g < groups; ++g) {
    uint8_t *gp = dst + (int64_t)g * vb;
    float *dx = (float *)(dst + (int64_t)groups * vb) + g * gb;
    if (format == KILN_GGML_TYPE_Q4_0) /* correction lanes: only every 4th word is set */
      for (int32_t i = 0; i < 32; ++i)
        ((int32_t *)(gp + 256))[i] = 0;
    for (int32_t k = 0; k < gb; ++k) {
      const int32_t b = g * gb + k, i0 = b * 32;
      int8_t q[32];
      int32_t s = 0;
      float d = 0.0f;
      if (b < nb) {
        d = hvx_quantize_block(x + i0, KILN_UK_MIN(32, in - i0), q, &s);
      } else {
        for (int32_t j = 0; j < 32; ++j)
          q[j] = 0;
      }
      dx[k] = d;
      if (format == KILN_GGML_TYPE_Q8_0) {
        for (int32_t j = 0; j < 32; ++j)
          ((int8_t *)gp)[32 * k + j] = q[j];
      } else {
        for (int32_t j = 0; j < 16; ++j) {
          ((int8_t *)gp)[16 * k + j] = q[j];
          ((int8_t *)gp)[128 + 16 * k + j] = q[16 + j];
        }
        ((int32_t *)(gp + 256))[4 * k] = -8 * s;
      }
    }
  }
}

/* The bytes of a group's block scales (bytes bb * k, bb * k + 1 of the group): q8_0 and
 * q4_0. Constant data, one vector load. */
static const uint8_t hvx_scale_bytes[2][128] __attribute__((aligned(128))) = {
  {
    0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  },
  {
    0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
  }};
KILN_UK_INLINE HVX_Vector hvx_scale_mask(uint32_t format) {
  return *(const HVX_Vector *)hvx_scale_bytes[format == KILN_GGML_TYPE_Q8_0 ? 0 : 1];
}

/* Codes of `count` (<= gb) blocks of a row starting at block pointer g0, block k at byte
 * slot k * slot of the result (slot 32 for q8_0, 16 for q4_0); missing blocks are zero.
 * *scales gets the group's first 128 bytes with everything but the fp16 scales of its
 * blocks zeroed (scale k at byte bb * k, inside block k's word lanes k * slot / 4 ..).
 * Block k's codes start at g0 + bb*k + 2, so the group's bytes shifted by 2 + 2k put them
 * at slot k (bb - slot = 2), and vmux keeps that slot.
 * Only aligned loads of vectors that hold some of the group's bytes: an unaligned load
 * (vmemu) reads whole aligned vectors, and LLVM widens neighbouring unaligned loads into
 * aligned ones beyond the last byte used, which faults when the weights end at a page. */
KILN_UK_INLINE HVX_Vector hvx_gather(uint32_t format, const uint8_t *g0, int32_t count,
                                     HVX_Vector *scales) {
  const int32_t gb = hvx_group_blocks(format);
  const int32_t bb = format == KILN_GGML_TYPE_Q8_0 ? 34 : 18, slot = 128 / gb;
  if (count == gb) {
    const uintptr_t first = (uintptr_t)g0, last = (uintptr_t)(g0 + bb * gb - 1);
    const uintptr_t a0 = first & ~(uintptr_t)127, a2 = last & ~(uintptr_t)127;
    const HVX_Vector v0 = *(const HVX_Vector *)a0, v1 = *(const HVX_Vector *)(a0 + 128);
    /* the third vector only when the group reaches into it (else any held one will do) */
    const HVX_Vector v2 = *(const HVX_Vector *)(a2 > a0 + 128 ? a2 : a0 + 128);
    const HVX_Vector r0 = Q6_V_valign_VVR(v1, v0, (int32_t)first); /* bytes g0 .. g0+128 */
    const HVX_Vector r1 = Q6_V_valign_VVR(v2, v1, (int32_t)first); /* bytes g0+128 .. */
    *scales = Q6_V_vand_VV(r0, hvx_scale_mask(format));
    HVX_Vector v = Q6_V_valign_VVR(r1, r0, 2 + 2 * (gb - 1));
    for (int32_t k = gb - 2; k >= 0; --k)
      v = Q6_V_vmux_QVV(Q6_Q_vsetq_R(slot * (k + 1)), Q6_V_valign_VVR(r1, r0, 2 + 2 * k), v);
    return v;
  }
  const HVX_Vector head = hvx_load_safe(g0, g0 + bb * count - 1);
  *scales = Q6_V_vmux_QVV(Q6_Q_vsetq_R(bb * count), Q6_V_vand_VV(head, hvx_scale_mask(format)),
                          Q6_V_vzero());
  HVX_Vector v = Q6_V_vzero();
  for (int32_t k = count - 1; k >= 0; --k) {
    const HVX_Vector b = hvx_load_safe(g0 + 2 + 2 * k, g0 + bb * k + bb - 1);
    v = Q6_V_vmux_QVV(Q6_Q_vsetq_R(slot * (k + 1)), b, v);
  }
  return v;
}

/* Pairwise sums of adjacent words: lanes 0-15 from lo's pairs, 16-31 from hi's. */
KILN_UK_INLINE HVX_Vector hvx_pair_sum(HVX_Vector hi, HVX_Vector lo) {
  const HVX_VectorPair d = Q6_W_vdeal_VVR(hi, lo, -4);
  return Q6_Vw_vadd_VwVw(Q6_V_lo_W(d), Q6_V_hi_W(d));
}

/* One group (4 q8_0 / 8 q4_0 blocks) for an 8-row x TT-token tile. */
KILN_UK_INLINE void hvx_tile_group(uint32_t format, int32_t TT, const uint8_t *const *rows,
                                   const uint8_t *xq, int64_t xq_stride, int32_t groups,
                                   int32_t g, int32_t count, float acc[HVX_MAX_TT][HVX_ROWS]) {
  const int32_t gb = hvx_group_blocks(format), vb = hvx_group_vec_bytes(format);
  const int32_t bb = format == KILN_GGML_TYPE_Q8_0 ? 34 : 18;
  HVX_Vector wlo[HVX_ROWS], whi[HVX_ROWS];
  HVX_Vector sc[HVX_ROWS]; /* each row's scale bytes (hvx_gather) */
  for (int32_t r = 0; r < HVX_ROWS; ++r) {
    const uint8_t *g0 = rows[r] + (int64_t)g * gb * bb;
    const HVX_Vector v = hvx_gather(format, g0, count, &sc[r]);
    if (format == KILN_GGML_TYPE_Q8_0) {
      wlo[r] = v;
    } else {
      const HVX_Vector low4 = Q6_Vb_vsplat_R(0x0f);
      wlo[r] = Q6_V_vand_VV(v, low4);
      whi[r] = Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(v, 4), low4);
    }
  }
  /* the scales into the sums' lane order by the same tree (one nonzero word per block:
   * the pair sums move it), then from the word's high half (odd k) to the low one */
  HVX_Vector hs[2];
  {
    HVX_Vector m1[4], m2[2];
    for (int32_t i = 0; i < 4; ++i)
      m1[i] = hvx_pair_sum(sc[2 * i + 1], sc[2 * i]);
    for (int32_t i = 0; i < 2; ++i)
      m2[i] = hvx_pair_sum(m1[2 * i + 1], m1[2 * i]);
    if (format == KILN_GGML_TYPE_Q8_0)
      hs[0] = hvx_pair_sum(m2[1], m2[0]);
    else
      hs[0] = m2[0], hs[1] = m2[1];
    for (int32_t i = 0; i < (format == KILN_GGML_TYPE_Q8_0 ? 1 : 2); ++i)
      hs[i] = Q6_V_vand_VV(Q6_V_vor_VV(hs[i], Q6_Vuw_vlsr_VuwR(hs[i], 16)),
                           Q6_V_vsplat_R(0xffff));
  }
  for (int32_t t = 0; t < TT; ++t) {
    const uint8_t *xt = xq + t * xq_stride;
    const uint8_t *gp = xt + (int64_t)g * vb;
    const float *dx = (const float *)(xt + (int64_t)groups * vb) + g * gb;
    HVX_Vector s[HVX_ROWS];
    if (format == KILN_GGML_TYPE_Q8_0) {
      const HVX_Vector xv = *(const HVX_Vector *)gp;
      for (int32_t r = 0; r < HVX_ROWS; ++r)
        s[r] = Q6_Vw_vrmpy_VbVb(wlo[r], xv);
    } else {
      const HVX_Vector xlo = ((const HVX_Vector *)gp)[0], xhi = ((const HVX_Vector *)gp)[1];
      const HVX_Vector corr = ((const HVX_Vector *)gp)[2];
      for (int32_t r = 0; r < HVX_ROWS; ++r)
        s[r] = Q6_Vw_vrmpyacc_VwVubVb(Q6_Vw_vrmpyacc_VwVubVb(corr, wlo[r], xlo), whi[r], xhi);
    }
    /* 8 (q8_0) or 4 (q4_0) lanes per block -> 1: lane 4r + k, or 8r + k per 4 rows */
    HVX_Vector l1[4], l2[2];
    for (int32_t i = 0; i < 4; ++i)
      l1[i] = hvx_pair_sum(s[2 * i + 1], s[2 * i]);
    for (int32_t i = 0; i < 2; ++i)
      l2[i] = hvx_pair_sum(l1[2 * i + 1], l1[2 * i]);
    union {
      HVX_Vector v[2];
      float f[64];
    } sums;
    if (format == KILN_GGML_TYPE_Q8_0) {
      sums.v[0] = hvx_scaled_sums(hvx_pair_sum(l2[1], l2[0]), hs[0]);
    } else {
      sums.v[0] = hvx_scaled_sums(l2[0], hs[0]);
      sums.v[1] = hvx_scaled_sums(l2[1], hs[1]);
    }
    float dxk[HVX_Q4_GROUP];
    for (int32_t k = 0; k < gb; ++k)
      dxk[k] = dx[k];
    /* 16 products per step, then a compiler barrier: loading all 32 (64) products at
     * once ran out of registers and spilled (1.6 packets per (row, block) against 0.6) */
    for (int32_t r = 0; r < HVX_ROWS; ++r) {
      float a = acc[t][r];
      for (int32_t k = 0; k < gb; ++k)
        a += sums.f[gb * r + k] * dxk[k];
      acc[t][r] = a;
      if ((r + 1) % (16 / gb) == 0)
        __asm__ volatile("" ::: "memory");
    }
  }
}

/* Rows [r0, r0 + 8) (pointers clamped to the last row; results past r1 dropped) for
 * tokens t0 .. t0 + TT. */
KILN_UK_INLINE void hvx_tile(const linear_args_t *a, uint32_t format, int32_t mode, int32_t TT,
                             int64_t r0, int64_t r1, int32_t t0, const uint8_t *xq,
                             int64_t xq_stride) {
  const uint8_t *rows[HVX_ROWS];
  for (int32_t r = 0; r < HVX_ROWS; ++r)
    rows[r] = a->w + KILN_UK_MIN(r0 + r, r1 - 1) * a->row_stride;
  float acc[HVX_MAX_TT][HVX_ROWS];
  for (int32_t t = 0; t < HVX_MAX_TT; ++t)
    for (int32_t r = 0; r < HVX_ROWS; ++r)
      acc[t][r] = 0.0f;
  const int32_t nb = (a->in + 31) / 32, gb = hvx_group_blocks(format);
  const int32_t groups = hvx_groups(format, a->in);
  int32_t g = 0;
  for (; (g + 1) * gb <= nb; ++g)
    hvx_tile_group(format, TT, rows, xq, xq_stride, groups, g, gb, acc);
  if (g * gb < nb)
    hvx_tile_group(format, TT, rows, xq, xq_stride, groups, g, nb - g * gb, acc);
  const int32_t nr = (int32_t)KILN_UK_MIN((int64_t)HVX_ROWS, r1 - r0);
  for (int32_t r = 0; r < nr; ++r)
    for (int32_t t = 0; t < TT; ++t)
      kiln_uk_linear_store(&a->ep, mode, t0 + t, r0 + r, acc[t][r]);
}

KILN_UK_INLINE void hvx_rows(const linear_args_t *a, uint32_t format, int32_t mode, int64_t r0,
                             int64_t r1) {
  uint8_t xq[HVX_XBUF] __attribute__((aligned(128)));
  const int64_t stride = hvx_token_bytes(format, a->in);
  const int32_t tt = (int32_t)KILN_UK_MIN((int64_t)HVX_MAX_TT, HVX_XBUF / stride);
  for (int32_t t0 = 0; t0 < a->n; t0 += tt) {
    const int32_t nt = KILN_UK_MIN(tt, a->n - t0);
    for (int32_t t = 0; t < nt; ++t)
      hvx_quantize_token(format, a->x + (int64_t)(t0 + t) * a->in, a->in, xq + t * stride);
    for (int64_t r = r0; r < r1; r += HVX_ROWS) {
      /* a constant token count per copy, so the accumulators stay in registers */
      switch (nt) {
      case 1: hvx_tile(a, format, mode, 1, r, r1, t0, xq, stride); break;
      case 2: hvx_tile(a, format, mode, 2, r, r1, t0, xq, stride); break;
      case 3: hvx_tile(a, format, mode, 3, r, r1, t0, xq, stride); break;
      default: hvx_tile(a, format, mode, 4, r, r1, t0, xq, stride); break;
      }
    }
  }
}

KILN_UK_INLINE void linear_rows(const linear_args_t *a, uint32_t format, int32_t mode,
                                int64_t r0, int64_t r1) {
  if ((format == KILN_GGML_TYPE_Q8_0 || format == KILN_GGML_TYPE_Q4_0) &&
      hvx_token_bytes(format, a->in) <= HVX_XBUF) {
    hvx_rows(a, format, mode, r0, r1);
    return;
  }
  generic_linear_rows(a, format, mode, r0, r1);
}

#include "linear_entry.h"
