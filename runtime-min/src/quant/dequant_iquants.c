/* kiln runtime-min: iq4_nl and iq4_xs decoders, bit-exact with ggml's
 * `dequantize_row_iq4_nl` / `dequantize_row_iq4_xs` (ggml/src/ggml-quants.c).
 *
 * Both store 4-bit indices into one fixed non-linear table of int8 levels; iq4_nl has an
 * fp16 scale per 32 values, iq4_xs a 256-value super-block with 6-bit sub-block scales.
 */
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"

/* ggml's kvalues_iq4nl (ggml-common.h): denser near zero, where weights cluster. */
static const int8_t kvalues_iq4nl[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
};

void kiln_dequantize_row_iq4_nl(const void *src, float *y, uint64_t n) {
  const uint8_t *p = (const uint8_t *)src;
  for (uint64_t i = 0; i < n / QK4_NL; ++i, y += QK4_NL) {
    kiln_block_iq4_nl_t b;
    memcpy(&b, p + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    for (int j = 0; j < QK4_NL / 2; ++j) {
      y[j] = d * kvalues_iq4nl[b.qs[j] & 0xf];
      y[j + QK4_NL / 2] = d * kvalues_iq4nl[b.qs[j] >> 4];
    }
  }
}

void kiln_dequantize_row_iq4_xs(const void *src, float *y, uint64_t n) {
  const uint8_t *p = (const uint8_t *)src;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    kiln_block_iq4_xs_t b;
    memcpy(&b, p + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const uint8_t *qs = b.qs;
    for (int ib = 0; ib < QK_K / 32; ++ib, y += 32, qs += 16) {
      /* 6-bit scale: low nibble from scales_l, high 2 bits from scales_h, biased by 32 */
      const int ls = ((b.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) |
                     (((b.scales_h >> 2 * ib) & 3) << 4);
      const float dl = d * (ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kvalues_iq4nl[qs[j] & 0xf];
        y[j + 16] = dl * kvalues_iq4nl[qs[j] >> 4];
      }
    }
  }
}
