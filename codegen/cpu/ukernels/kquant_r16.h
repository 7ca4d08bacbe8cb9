/* kiln micro-kernels: one row's fields of a q4_K_r16 / q5_K_r16 / q6_K_r16 group
 * (kiln/quant_packed.h), read in portable C by the linear (packed_kquant.h) and embed kernels
 * (internal). */
#ifndef KILN_CODEGEN_CPU_UKERNELS_KQUANT_R16_H_
#define KILN_CODEGEN_CPU_UKERNELS_KQUANT_R16_H_

#include "common.h"
#include "kiln/quant_packed.h"

/* q4_K_r16 super-block sb, row r: sub-block j's 6-bit scale and min. */
KILN_UK_INLINE void kq4_scale_min(const uint8_t *sb, int32_t r, int32_t j, int32_t *sc,
                                  int32_t *m) {
  const int32_t lo = sb[64 + j * 16 + r];
  const uint32_t hi = kiln_uk_load_u32(sb + 192 + r * 4) >> (4 * j);
  *sc = (lo & 15) | (int32_t)(hi & 3) << 4;
  *m = (lo >> 4) | (int32_t)((hi >> 2) & 3) << 4;
}

/* q5_K_r16: the code (0..31) of element e (0..31) of row r in a sub-block's 5 chunks. */
KILN_UK_INLINE int32_t kq5_code(const uint8_t *codes, int32_t r, int32_t e) {
  const int32_t i = r * 4 + e % 4, k = e % 16 / 4;
  const int32_t lo = e < 16 ? codes[k * 64 + i] & 15 : codes[k * 64 + i] >> 4;
  return lo | ((codes[256 + i] >> (k + (e < 16 ? 0 : 4))) & 1) << 4;
}

/* q6_K_r16: the code of element e (0..31) of row r in a sub-block's 6 chunks. */
KILN_UK_INLINE int32_t kq6_code(const uint8_t *codes, int32_t r, int32_t e) {
  const int32_t i = r * 4 + e % 4, k = e % 16 / 4;
  const int32_t lo = e < 16 ? codes[k * 64 + i] & 15 : codes[k * 64 + i] >> 4;
  const int32_t hi = (codes[256 + (e < 16 ? 0 : 64) + i] >> (2 * k)) & 3;
  return lo | hi << 4;
}

#endif /* KILN_CODEGEN_CPU_UKERNELS_KQUANT_R16_H_ */
