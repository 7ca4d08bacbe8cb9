/* kiln micro-kernels, Hexagon HVX: helpers shared by hvx/linear.c and hvx/linear_packed.c
 * (internal). 128-byte vectors, v67 instructions only (what qemu-hexagon-static runs). */
#ifndef KILN_CODEGEN_CPU_UKERNELS_HVX_COMMON_H_
#define KILN_CODEGEN_CPU_UKERNELS_HVX_COMMON_H_

#include <hexagon_protos.h>
#include <hexagon_types.h>

#include "common.h"

/* The vector whose bytes [i, i + 128) are memory [a + i), reading only the aligned vectors
 * that hold a and last (>= a): for the ends of the weights, where an unaligned load could
 * touch the next page. */
KILN_UK_INLINE HVX_Vector hvx_load_safe(const uint8_t *a, const uint8_t *last) {
  const HVX_Vector lo = *(const HVX_Vector *)((uintptr_t)a & ~(uintptr_t)127);
  const HVX_Vector hi = *(const HVX_Vector *)((uintptr_t)last & ~(uintptr_t)127);
  return Q6_V_valign_VVR(hi, lo, (int32_t)(uintptr_t)a);
}

/* Starts bringing [p, p + bytes) into L2 in the background: one l2fetch box of rows of
 * HVX_FETCH_ROW bytes (the box's 16-bit width, stride and height fields; a hint that never
 * faults). A hardware thread has one l2fetch active: a new one replaces it. qemu executes
 * l2fetch as a no-op, so under emulation only its packets are seen. */
#define HVX_FETCH_ROW 8192
KILN_UK_INLINE void hvx_l2fetch(const uint8_t *p, int64_t bytes) {
  if (bytes <= 0)
    return;
  const int64_t rows = KILN_UK_MIN((bytes + HVX_FETCH_ROW - 1) / HVX_FETCH_ROW, 65535);
  const uint64_t box =
      ((uint64_t)HVX_FETCH_ROW << 32) | ((uint64_t)HVX_FETCH_ROW << 16) | (uint64_t)rows;
  Q6_l2fetch_AP((void *)p, (long long)box);
}

/* The 64 halfwords of v zero-extended to words in order: halfwords 0-31 in the low vector,
 * 32-63 in the high one (the extension splits even and odd lanes; the shuffle puts them
 * back). */
KILN_UK_INLINE HVX_VectorPair hvx_halves_words(HVX_Vector v) {
  const HVX_VectorPair z = Q6_Wuw_vzxt_Vuh(v);
  return Q6_W_vshuff_VVR(Q6_V_hi_W(z), Q6_V_lo_W(z), -4);
}

/* fp16 lanes (the low half of each word) taken apart once for several products with small
 * integers: the significand with its implicit bit (none when subnormal), the exponent (as for
 * e = 1 when subnormal) and the sign at bit 31. Finite halves only (no inf or NaN). */
typedef struct {
  HVX_Vector m, e, sign;
} hvx_half_t;

KILN_UK_INLINE hvx_half_t hvx_half(HVX_Vector h) {
  const HVX_Vector e = Q6_V_vand_VV(Q6_Vuw_vlsr_VuwR(h, 10), Q6_V_vsplat_R(31));
  const HVX_Vector frac = Q6_V_vand_VV(h, Q6_V_vsplat_R(0x3ff));
  hvx_half_t r;
  r.m = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(e, Q6_V_vzero()), frac,
                      Q6_V_vor_VV(frac, Q6_V_vsplat_R(0x400)));
  r.e = Q6_Vw_vmax_VwVw(e, Q6_V_vsplat_R(1));
  r.sign = Q6_V_vand_VV(Q6_Vw_vasl_VwR(h, 16), Q6_V_vsplat_R((int32_t)0x80000000));
  return r;
}

/* (row, block) dot products times their fp16 block scales, as float bits, 32 lanes at a
 * time (HVX before v68 has no float): p = isum * m_w exactly in int32 (|isum| < 2^19, the
 * half's significand m_w < 2^11), rounded once to 24 bits (to nearest, ties to even), and
 * 2^(e_w - 25) added in the exponent field. So the scalar code is left with one fused
 * multiply-add per (row, block), by d_x. h: the fp16 bits in the low half of each lane. */
KILN_UK_INLINE HVX_Vector hvx_scaled_sums(HVX_Vector isum, HVX_Vector h) {
  const HVX_Vector zero = Q6_V_vzero(), one = Q6_V_vsplat_R(1);
  const hvx_half_t w = hvx_half(h);
  const HVX_Vector p = Q6_Vw_vmpyie_VwVuh(isum, w.m);
  const HVX_Vector a = Q6_Vw_vabs_Vw(p);
  const HVX_Vector sh = Q6_Vw_vnormamt_Vw(a); /* leading bit to bit 30 */
  const HVX_Vector m = Q6_Vw_vasl_VwVw(a, sh);
  const HVX_Vector hi = Q6_Vuw_vlsr_VuwR(m, 7); /* 24 bits, the leading one at bit 23 */
  /* + 1 when the 7 bits below exceed half, or equal it with hi odd */
  const HVX_Vector rnd = Q6_Vuw_vlsr_VuwR(
      Q6_Vw_vadd_VwVw(Q6_Vw_vadd_VwVw(Q6_V_vand_VV(m, Q6_V_vsplat_R(0x7f)), Q6_V_vand_VV(hi, one)),
                      Q6_V_vsplat_R(63)),
      7);
  /* biased exponent of |p| * 2^(ew - 25): 127 + 30 - sh + ew - 25, minus 1 for the
   * leading one in hi (a rounding carry into bit 24 bumps the exponent, as it should) */
  const HVX_Vector ex =
      Q6_Vw_vasl_VwR(Q6_Vw_vsub_VwVw(Q6_Vw_vadd_VwVw(w.e, Q6_V_vsplat_R(131)), sh), 23);
  const HVX_Vector sign =
      Q6_V_vxor_VV(Q6_V_vand_VV(isum, Q6_V_vsplat_R((int32_t)0x80000000)), w.sign);
  const HVX_Vector bits = Q6_V_vor_VV(Q6_Vw_vadd_VwVw(Q6_Vw_vadd_VwVw(hi, rnd), ex), sign);
  return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(p, zero), zero, bits);
}

/* k * h (or -(k * h) with negate) as float bits, exactly: for 0 <= k < 2^13, so the product
 * of k and the significand has at most 24 bits (hvx_scaled_sums's steps with no rounding). */
KILN_UK_INLINE HVX_Vector hvx_half_times(HVX_Vector k, hvx_half_t h, int32_t negate) {
  const HVX_Vector p = Q6_Vw_vmpyie_VwVuh(k, h.m);
  const HVX_Vector sh = Q6_Vw_vnormamt_Vw(p); /* leading bit to bit 30 */
  const HVX_Vector m = Q6_Vuw_vlsr_VuwR(Q6_Vw_vasl_VwVw(p, sh), 7);
  const HVX_Vector ex =
      Q6_Vw_vasl_VwR(Q6_Vw_vsub_VwVw(Q6_Vw_vadd_VwVw(h.e, Q6_V_vsplat_R(131)), sh), 23);
  const HVX_Vector sign =
      negate ? Q6_V_vxor_VV(h.sign, Q6_V_vsplat_R((int32_t)0x80000000)) : h.sign;
  const HVX_Vector bits = Q6_V_vor_VV(Q6_Vw_vadd_VwVw(m, ex), sign);
  return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(p, Q6_V_vzero()), Q6_V_vzero(), bits);
}

/* Integer lanes (|v| < 2^24) as float bits, exactly: the leading one to bit 23, the
 * exponent added above it (its field gets the leading one too, hence 156 = 127 + 30 - 1). */
KILN_UK_INLINE HVX_Vector hvx_int_floats(HVX_Vector v) {
  const HVX_Vector zero = Q6_V_vzero();
  const HVX_Vector a = Q6_Vw_vabs_Vw(v);
  const HVX_Vector sh = Q6_Vw_vnormamt_Vw(a); /* leading bit to bit 30 */
  const HVX_Vector m = Q6_Vuw_vlsr_VuwR(Q6_Vw_vasl_VwVw(a, sh), 7);
  const HVX_Vector ex = Q6_Vw_vasl_VwR(Q6_Vw_vsub_VwVw(Q6_V_vsplat_R(156), sh), 23);
  const HVX_Vector sign = Q6_V_vand_VV(v, Q6_V_vsplat_R((int32_t)0x80000000));
  const HVX_Vector bits = Q6_V_vor_VV(Q6_Vw_vadd_VwVw(m, ex), sign);
  return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(v, zero), zero, bits);
}

#endif /* KILN_CODEGEN_CPU_UKERNELS_HVX_COMMON_H_ */
