/* kiln micro-kernels, Hexagon HVX: q4_K_r16, q5_K_r16 and q6_K_r16 (kiln/quant_packed.h),
 * included by hvx/linear_packed.c after its r16 block step; packed_kquant.h states the math
 * and the float steps, which these follow to the bit.
 *
 * A sub-block's codes are q4_0_r16's chunks (word lane r of chunk k: 4 weights of row r), so
 * hvxp_block's vrmpy step gives its 16 integer sums; q5_K and q6_K first put their codes'
 * high bits above the nibbles (a halfword shift, an and and an or per vector). Two
 * sub-blocks share a vector, lane 16 * (j & 1) + r, as a q4_0 unit's two blocks do.
 *
 * HVX before v68 has no float, so what the float steps read is made exactly in integer
 * lanes: the sums as float bits (exact: |sum| < 2^24), and once per super-block q4_K's
 * d * sc and -(dmin * m) (17-bit products) or q6_K's d (hvx_half_times). The scalar code
 * is left with packed_kquant.h's multiply and fused multiply-adds per (row, sub-block), in
 * its order, so the results equal the portable code's bit for bit (tests/emu/hexagon/
 * ukernel_diff.c). The scales are made once per super-block for a tile of tokens.
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_HVX_LINEAR_PACKED_KQUANT_H_
#define KILN_CODEGEN_CPU_UKERNELS_HVX_LINEAR_PACKED_KQUANT_H_

#include "../packed_kquant.h"

#define HKQ_TT 4 /* tokens per walk over a group's super-blocks */

typedef int32_t hkq_i32x32_t __attribute__((vector_size(128)));

/* Four vectors of 32 floats: a super-block's 8 sub-blocks x 16 rows, lane 16 * (j & 1) + r
 * of vector j / 2. */
typedef union {
  HVX_Vector v[4];
  float f[4][32];
} hkq_lanes_t;

/* The 128 bytes of v as words, w[q] lane i = byte 32q + i, zero- or sign-extended
 * (the extensions split even and odd lanes; the shuffles put them back in order). */
KILN_UK_INLINE void hkq_words(HVX_Vector v, int32_t sign, HVX_Vector w[4]) {
  const HVX_VectorPair h0 = sign ? Q6_Wh_vsxt_Vb(v) : Q6_Wuh_vzxt_Vub(v);
  const HVX_VectorPair h = Q6_W_vshuff_VVR(Q6_V_hi_W(h0), Q6_V_lo_W(h0), -2);
  for (int32_t k = 0; k < 2; ++k) {
    const HVX_Vector x = k ? Q6_V_hi_W(h) : Q6_V_lo_W(h);
    const HVX_VectorPair z = sign ? Q6_Ww_vsxt_Vh(x) : Q6_Wuw_vzxt_Vuh(x);
    const HVX_VectorPair o = Q6_W_vshuff_VVR(Q6_V_hi_W(z), Q6_V_lo_W(z), -4);
    w[2 * k] = Q6_V_lo_W(o);
    w[2 * k + 1] = Q6_V_hi_W(o);
  }
}

/* [bytes 0-63 of a | bytes 0-63 of b] */
KILN_UK_INLINE HVX_Vector hkq_low_halves(HVX_Vector a, HVX_Vector b) {
  return Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), a, Q6_V_vror_VR(b, 64));
}

/* q4_K/q5_K super-block sb: d * sc and -(dmin * m) per (sub-block, row), as floats. */
KILN_UK_INLINE void hkq_q4_scales(const uint8_t *sb, hkq_lanes_t *dw, hkq_lanes_t *mw) {
  /* d and dmin (16 fp16 each) as words: [d | dmin], then [d | d] and [dmin | dmin] */
  const HVX_Vector dd = Q6_V_lo_W(hvx_halves_words(hvx_load_safe(sb, sb + 63)));
  const HVX_Vector d = hkq_low_halves(dd, dd);
  const HVX_Vector dmin = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), Q6_V_vror_VR(dd, 64), dd);
  /* the low 4 bits of scale and min: byte j * 16 + r, so low[u] is in lane order */
  HVX_Vector low[4];
  hkq_words(hvx_load_safe(sb + 64, sb + 191), 0, low);
  /* the top 2 bits: row r's word, nibble j; lanes 16-31 take it shifted by one nibble */
  const HVX_Vector w = hvx_load_safe(sb + 192, sb + 255);
  const HVX_Vector ww = hkq_low_halves(w, w);
  const HVX_Vector top = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), ww, Q6_Vuw_vlsr_VuwR(ww, 4));
  const HVX_Vector three = Q6_V_vsplat_R(3), fifteen = Q6_V_vsplat_R(15);
  const hvx_half_t hd = hvx_half(d), hmin = hvx_half(dmin);
  for (int32_t u = 0; u < 4; ++u) {
    const HVX_Vector hi = Q6_Vuw_vlsr_VuwR(top, 8 * u);
    const HVX_Vector sc = Q6_V_vor_VV(Q6_V_vand_VV(low[u], fifteen),
                                      Q6_Vw_vasl_VwR(Q6_V_vand_VV(hi, three), 4));
    const HVX_Vector m =
        Q6_V_vor_VV(Q6_Vuw_vlsr_VuwR(low[u], 4),
                    Q6_Vw_vasl_VwR(Q6_V_vand_VV(Q6_Vuw_vlsr_VuwR(hi, 2), three), 4));
    dw->v[u] = hvx_half_times(sc, hd, 0);
    mw->v[u] = hvx_half_times(m, hmin, 1);
  }
}

/* q5_K sub-block: as hvxp_block's q4_0 step with the fifth chunk's bits as bit 4 of the
 * codes (byte i: bit k for element 4k + i, bit 4 + k for 16 + 4k + i). */
KILN_UK_INLINE HVX_Vector hkq_q5_block(const uint8_t *codes, const int32_t *xw) {
  const HVX_Vector low4 = Q6_Vb_vsplat_R(0x0f), bit4 = Q6_Vb_vsplat_R(0x10);
  const HVX_Vector f = hvx_load_safe(codes + 256, codes + 319);
  /* [bits | bits >> 1]: the second half's chunk is one k further */
  const HVX_Vector ff = hkq_low_halves(f, Q6_Vuh_vlsr_VuhR(f, 1));
  HVX_Vector lo = Q6_V_vzero(), hi = Q6_V_vzero();
  for (int32_t v = 0; v < 2; ++v) {
    const HVX_Vector c = hvx_load_safe(codes + 128 * v, codes + 128 * v + 127);
    const HVX_Vector t = Q6_Vuh_vlsr_VuhR(ff, 2 * v);
    const HVX_Vector cl =
        Q6_V_vor_VV(Q6_V_vand_VV(c, low4), Q6_V_vand_VV(Q6_Vh_vasl_VhR(t, 4), bit4));
    const HVX_Vector ch =
        Q6_V_vor_VV(Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(c, 4), low4), Q6_V_vand_VV(t, bit4));
    lo = Q6_Vw_vrmpyacc_VwVubRb(lo, cl, xw[2 * v]);
    lo = Q6_Vw_vrmpyacc_VwVubRb(lo, ch, xw[4 + 2 * v]);
    hi = Q6_Vw_vrmpyacc_VwVubRb(hi, cl, xw[2 * v + 1]);
    hi = Q6_Vw_vrmpyacc_VwVubRb(hi, ch, xw[4 + 2 * v + 1]);
  }
  return Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), lo, hi);
}

/* q6_K sub-block: the sums over each 16-element half (i0: the low nibbles' elements 0-15,
 * i1: 16-31), started at -32 times the activation half sums s0, s1; the 2-bit chunks
 * (byte i: bits 2k, 2k + 1 for element 4k + i, resp. 16 + 4k + i) go to bits 4-5. */
KILN_UK_INLINE void hkq_q6_block(const uint8_t *codes, const int32_t *xw, int32_t s0,
                                 int32_t s1, HVX_Vector *i0, HVX_Vector *i1) {
  const HVX_Vector low4 = Q6_Vb_vsplat_R(0x0f), bits45 = Q6_Vb_vsplat_R(0x30);
  const HVX_Vector h = hvx_load_safe(codes + 256, codes + 383); /* [h0 | h1] */
  const HVX_Vector hs = Q6_V_vror_VR(h, 64);                    /* [h1 | h0] */
  /* [h0 | h0 >> 2] and [h1 | h1 >> 2]: the second half's chunk is one k further */
  const HVX_Vector x = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), h, Q6_Vuh_vlsr_VuhR(hs, 2));
  const HVX_Vector y = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), hs, Q6_Vuh_vlsr_VuhR(h, 2));
  HVX_Vector a0 = Q6_V_vsplat_R(-32 * s0), b0 = Q6_V_vzero();
  HVX_Vector a1 = Q6_V_vsplat_R(-32 * s1), b1 = Q6_V_vzero();
  for (int32_t v = 0; v < 2; ++v) {
    const HVX_Vector c = hvx_load_safe(codes + 128 * v, codes + 128 * v + 127);
    const HVX_Vector tx = Q6_Vh_vasl_VhR(Q6_Vuh_vlsr_VuhR(x, 4 * v), 4);
    const HVX_Vector ty = Q6_Vh_vasl_VhR(Q6_Vuh_vlsr_VuhR(y, 4 * v), 4);
    const HVX_Vector cl = Q6_V_vor_VV(Q6_V_vand_VV(c, low4), Q6_V_vand_VV(tx, bits45));
    const HVX_Vector ch = Q6_V_vor_VV(Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(c, 4), low4),
                                      Q6_V_vand_VV(ty, bits45));
    a0 = Q6_Vw_vrmpyacc_VwVubRb(a0, cl, xw[2 * v]);
    b0 = Q6_Vw_vrmpyacc_VwVubRb(b0, cl, xw[2 * v + 1]);
    a1 = Q6_Vw_vrmpyacc_VwVubRb(a1, ch, xw[4 + 2 * v]);
    b1 = Q6_Vw_vrmpyacc_VwVubRb(b1, ch, xw[4 + 2 * v + 1]);
  }
  *i0 = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), a0, b0);
  *i1 = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), a1, b1);
}

/* Rows of group g for tokens t0 .. t0 + T - 1 (T <= HKQ_TT). */
KILN_UK_INLINE void hkq_group(const packed_args_t *a, uint32_t format, int64_t g, int32_t t0,
                              int32_t T) {
  const uint8_t *grp = a->w + g * a->group_stride;
  qact_t xq[HKQ_TT];
  float acc[HKQ_TT][ROWS];
  for (int32_t t = 0; t < T; ++t) {
    xq[t] = packed_qact(a, t0 + t);
    for (int32_t r = 0; r < ROWS; ++r)
      acc[t][r] = 0.0f;
  }
  const int32_t q6 = format == KILN_TYPE_Q6_K_R16;
  const int64_t sub = format == KILN_TYPE_Q4_K_R16   ? 256
                      : format == KILN_TYPE_Q5_K_R16 ? KILN_Q5_K_R16_SUB_BYTES
                                                     : KILN_Q6_K_R16_SUB_BYTES;
  for (int32_t s = 0; s < a->nb / 8; ++s) {
    const uint8_t *sb = grp + kiln_packed_super_offset(format, (uint64_t)s);
    const uint8_t *codes = sb + (q6 ? KILN_Q6_K_R16_CODES : KILN_Q4_K_R16_CODES);
    hkq_lanes_t dw, mw; /* q4_K/q5_K: d * sc, -(dmin * m); q6_K: d in dw.f[0][0-15] */
    HVX_Vector sc0[4], sc1[4];
    if (!q6) {
      hkq_q4_scales(sb, &dw, &mw);
    } else {
      const uint8_t *dp = grp + kiln_packed_q6_k_d_offset((uint64_t)s);
      const HVX_Vector d = Q6_V_lo_W(hvx_halves_words(hvx_load_safe(dp, dp + 31)));
      dw.v[0] = hvx_half_times(Q6_V_vsplat_R(1), hvx_half(d), 0);
      /* int8 scales: byte 32j + r for elements 0-15 of row r, 32j + 16 + r for 16-31;
       * sc0[u], sc1[u] in the sums' lane order for sub-blocks 2u, 2u + 1 */
      HVX_Vector w[8];
      hkq_words(hvx_load_safe(sb, sb + 127), 1, w);
      hkq_words(hvx_load_safe(sb + 128, sb + 255), 1, w + 4);
      for (int32_t u = 0; u < 4; ++u) {
        const HVX_VectorPair p = Q6_W_vdeal_VVR(w[2 * u + 1], w[2 * u], -64);
        sc0[u] = Q6_V_lo_W(p);
        sc1[u] = Q6_V_hi_W(p);
      }
    }
    for (int32_t t = 0; t < T; ++t) {
      const int32_t b0 = s * 8;
      hkq_lanes_t sums;
      for (int32_t u = 0; u < 4; ++u) {
        HVX_Vector part[2][2];
        for (int32_t e = 0; e < 2; ++e) {
          const int32_t b = b0 + 2 * u + e;
          const int32_t *xw = (const int32_t *)(xq[t].q + b * KILN_PACK_BLOCK);
          const uint8_t *c = codes + (2 * u + e) * sub;
          if (format == KILN_TYPE_Q4_K_R16)
            part[0][e] = hvxp_block(KILN_TYPE_Q4_0_R16, c, xw, 0);
          else if (format == KILN_TYPE_Q5_K_R16)
            part[0][e] = hkq_q5_block(c, xw);
          else
            hkq_q6_block(c, xw, xq[t].o[b], xq[t].s[b] - xq[t].o[b], &part[0][e], &part[1][e]);
        }
        HVX_Vector isum = hvxp_pair(part[0][0], part[0][1]);
        if (q6) { /* sc0 * i0 + sc1 * i1, exact in int32 */
          const HVX_Vector i1 = hvxp_pair(part[1][0], part[1][1]);
          isum = (HVX_Vector)((hkq_i32x32_t)sc0[u] * (hkq_i32x32_t)isum +
                              (hkq_i32x32_t)sc1[u] * (hkq_i32x32_t)i1);
        }
        sums.v[u] = hvx_int_floats(isum);
      }
      const float *xd = xq[t].d + b0, *xds = xq[t].ds + b0;
      for (int32_t r = 0; r < ROWS; r += 2) {
        float r0 = acc[t][r], r1 = acc[t][r + 1];
        const hvxp_f2_t d = *(const hvxp_f2_t *)&dw.f[0][r];
        KILN_UK_UNROLL
        for (int32_t j = 0; j < 8; ++j) {
          const int32_t u = j >> 1, l = 16 * (j & 1) + r;
          const hvxp_f2_t is = *(const hvxp_f2_t *)&sums.f[u][l];
          if (q6) {
            r0 += is[0] * (d[0] * xd[j]);
            r1 += is[1] * (d[1] * xd[j]);
          } else {
            const hvxp_f2_t w = *(const hvxp_f2_t *)&dw.f[u][l];
            const hvxp_f2_t m = *(const hvxp_f2_t *)&mw.f[u][l];
            r0 += is[0] * (w[0] * xd[j]);
            r0 += m[0] * xds[j];
            r1 += is[1] * (w[1] * xd[j]);
            r1 += m[1] * xds[j];
          }
        }
        acc[t][r] = r0, acc[t][r + 1] = r1;
      }
    }
  }
  for (int32_t t = 0; t < T; ++t)
    packed_store_rows(a, t0 + t, g * ROWS, acc[t], ROWS);
}

KILN_UK_INLINE void hkq_groups(const packed_args_t *a, uint32_t format, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g)
    for (int32_t t = 0; t < a->n; t += HKQ_TT)
      hkq_group(a, format, g, t, KILN_UK_MIN(HKQ_TT, a->n - t));
}

#endif /* KILN_CODEGEN_CPU_UKERNELS_HVX_LINEAR_PACKED_KQUANT_H_ */
