/* q4_K / q5_K's 12-byte packing of 8 6-bit sub-block scales and 8 6-bit mins, read back:
 * shared by the decoders (dequant_kquants.c) and the encoders (quantize_kquants.c), which
 * pack it (kq_pack_scale_min) and read it back as ggml's quantizers do. */
#ifndef KILN_SRC_QUANT_KQUANT_SCALES_H_
#define KILN_SRC_QUANT_KQUANT_SCALES_H_

#include <stdint.h>

/* Scale and min of sub-block j: j < 4 in the low 6 bits of bytes j and j + 4, j >= 4 as
 * the nibbles of byte j + 4 with their top two bits in those of bytes j - 4 and j. */
static inline void kiln_kquant_scale_min(const uint8_t *q, int j, uint8_t *sc, uint8_t *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

#endif /* KILN_SRC_QUANT_KQUANT_SCALES_H_ */
