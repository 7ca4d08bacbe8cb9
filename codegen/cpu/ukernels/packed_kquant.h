/* kiln micro-kernels: q4_K_r16, q5_K_r16 and q6_K_r16 (kiln/quant_packed.h) in portable C,
 * and the float steps every ISA's version repeats so that all give the same bits (internal).
 *
 * The activations are packed_common.h's int8 blocks of 32, one per K-quant sub-block:
 * - q4_K: sub-block j of a row is q4_1 with scale d * sc_j and minimum -dmin * m_j (both
 *   exact in float), so y += isum * ((d * sc_j) * d_x) + (-(dmin * m_j)) * (d_x * s), where
 *   isum = sum q * x over the codes q in 0..15: q4_1_r16's steps;
 * - q5_K: q4_K's steps with codes q in 0..31 (the fifth bit from the sub-block's fifth chunk);
 * - q6_K: codes q in 0..63 stand for q - 32 with an int8 scale per 16, so the block's
 *   integer sum is sc0 * (isum0 - 32 * s0) + sc1 * (isum1 - 32 * s1) (s0, s1: the
 *   activation codes' sums over each half; s0 is qact_t's o for this format), exact in int32
 *   and in float (|sum| < 2^24), and y += sum * (d * d_x).
 * The integer sums are exact on every path, so only these float steps decide the bits.
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_PACKED_KQUANT_H_
#define KILN_CODEGEN_CPU_UKERNELS_PACKED_KQUANT_H_

#include "kquant_r16.h"
#include "packed_common.h"

KILN_UK_INLINE void kq_generic_group_token(const packed_args_t *a, uint32_t format, int64_t g,
                                           int32_t t) {
  const uint8_t *grp = a->w + g * a->group_stride;
  const qact_t xq = packed_qact(a, t);
  float acc[16];
  for (int32_t r = 0; r < 16; ++r)
    acc[r] = 0.0f;
  for (int32_t s = 0; s < a->nb / 8; ++s) {
    const uint8_t *sb = grp + kiln_packed_super_offset(format, (uint64_t)s);
    const uint8_t *dp = format == KILN_TYPE_Q6_K_R16
                            ? grp + kiln_packed_q6_k_d_offset((uint64_t)s)
                            : sb;
    for (int32_t j = 0; j < 8; ++j) {
      const int32_t b = s * 8 + j;
      const int8_t *xb = xq.q + b * KILN_PACK_BLOCK;
      for (int32_t r = 0; r < 16; ++r) {
        const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(dp + r * 2));
        if (format != KILN_TYPE_Q6_K_R16) { /* q4_K, q5_K */
          int32_t isum = 0;
          if (format == KILN_TYPE_Q4_K_R16) {
            const uint8_t *codes = sb + KILN_Q4_K_R16_CODES + j * 256;
            for (int32_t e = 0; e < 16; ++e) {
              const int32_t c = codes[e / 4 * 64 + r * 4 + e % 4];
              isum += (c & 15) * xb[e] + (c >> 4) * xb[16 + e];
            }
          } else {
            const uint8_t *codes = sb + KILN_Q4_K_R16_CODES + j * KILN_Q5_K_R16_SUB_BYTES;
            for (int32_t e = 0; e < 32; ++e)
              isum += kq5_code(codes, r, e) * xb[e];
          }
          int32_t sc, m;
          kq4_scale_min(sb, r, j, &sc, &m);
          const float dw = d * (float)sc;
          const float mw = -(kiln_uk_fp16_to_fp32(kiln_uk_load_u16(sb + 32 + r * 2)) * (float)m);
          acc[r] += (float)isum * (dw * xq.d[b]);
          acc[r] += mw * xq.ds[b];
        } else {
          const uint8_t *codes = sb + KILN_Q6_K_R16_CODES + j * KILN_Q6_K_R16_SUB_BYTES;
          int32_t i0 = 0, i1 = 0;
          for (int32_t e = 0; e < 16; ++e) {
            i0 += kq6_code(codes, r, e) * xb[e];
            i1 += kq6_code(codes, r, 16 + e) * xb[16 + e];
          }
          const int32_t sc0 = (int8_t)sb[j * 32 + r], sc1 = (int8_t)sb[j * 32 + 16 + r];
          const int32_t s0 = xq.o[b], s1 = xq.s[b] - s0;
          const int32_t isum = sc0 * (i0 - 32 * s0) + sc1 * (i1 - 32 * s1);
          acc[r] += (float)isum * (d * xq.d[b]);
        }
      }
    }
  }
  packed_store_rows(a, t, g * 16, acc, 16);
}

KILN_UK_INLINE void kq_generic_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                      int64_t g1) {
  for (int64_t g = g0; g < g1; ++g)
    for (int32_t t = 0; t < a->n; ++t)
      kq_generic_group_token(a, format, g, t);
}

#endif /* KILN_CODEGEN_CPU_UKERNELS_PACKED_KQUANT_H_ */
