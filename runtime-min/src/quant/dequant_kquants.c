/* kiln runtime-min: k-quant decoders (q2_K..q6_K), bit-exact with ggml's
 * `dequantize_row_q*_K` (ggml/src/ggml-quants.c).
 *
 * A 256-value super-block holds an fp16 scale d (and dmin) plus small per-sub-block integer
 * scales. As in ggml, the sub-block scale is formed first in float (`d * sc`) and then
 * multiplies the quant (q6_K: `(d * sc) * q`, which rounds, so the order matters). Where a
 * min is subtracted, `d*sc*q` and `dmin*m` fit in 24 bits and are exact, so FMA contraction
 * cannot change the result.
 */
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "kquant_scales.h"

void kiln_dequantize_row_q2_K(const void *src, float *y, uint64_t n) {
  const uint8_t *p = (const uint8_t *)src;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    kiln_block_q2_K_t b;
    memcpy(&b, p + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const float min = kiln_fp16_to_fp32(b.dmin);
    const uint8_t *q = b.qs;
    int is = 0;
    for (int half = 0; half < QK_K / 128; ++half, q += 32) {
      /* each byte of q holds 4 2-bit quants, one per 32-value group */
      for (int shift = 0; shift < 8; shift += 2) {
        for (int k = 0; k < 2; ++k) { /* two 16-value sub-blocks per group */
          const uint8_t sc = b.scales[is++];
          const float dl = d * (sc & 0xf);
          const float ml = min * (sc >> 4);
          for (int l = 0; l < 16; ++l)
            *y++ = dl * ((q[l + 16 * k] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void kiln_dequantize_row_q3_K(const void *src, float *y, uint64_t n) {
  const uint8_t *p = (const uint8_t *)src;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    kiln_block_q3_K_t b;
    memcpy(&b, p + i * sizeof b, sizeof b);
    const float d_all = kiln_fp16_to_fp32(b.d);

    /* Unpack 16 6-bit scales: low 4 bits are nibbles of bytes 0..7 (low nibbles first),
     * high 2 bits are the 2-bit fields of bytes 8..11. */
    int8_t scales[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) {
      const int lo = j < 8 ? (b.scales[j] & 0xf) : (b.scales[j - 8] >> 4);
      const int hi = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      scales[j] = (int8_t)((lo | (hi << 4)) - 32);
    }

    const uint8_t *q = b.qs;
    uint8_t m = 1; /* hmask bit for the current 32-value group */
    int is = 0;
    for (int half = 0; half < QK_K / 128; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1)) {
        for (int k = 0; k < 2; ++k) {
          const float dl = d_all * scales[is++];
          for (int l = 16 * k; l < 16 * k + 16; ++l)
            *y++ = dl * (((q[l] >> shift) & 3) - ((b.hmask[l] & m) ? 0 : 4));
        }
      }
    }
  }
}

void kiln_dequantize_row_q4_K(const void *src, float *y, uint64_t n) {
  const uint8_t *p = (const uint8_t *)src;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    kiln_block_q4_K_t b;
    memcpy(&b, p + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const float min = kiln_fp16_to_fp32(b.dmin);
    const uint8_t *q = b.qs;
    for (int is = 0; is < QK_K / 32; is += 2, q += 32) {
      uint8_t sc, m;
      kiln_kquant_scale_min(b.scales, is, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      kiln_kquant_scale_min(b.scales, is + 1, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * (q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

void kiln_dequantize_row_q5_K(const void *src, float *y, uint64_t n) {
  const uint8_t *p = (const uint8_t *)src;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    kiln_block_q5_K_t b;
    memcpy(&b, p + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const float min = kiln_fp16_to_fp32(b.dmin);
    const uint8_t *ql = b.qs;
    uint8_t u1 = 1, u2 = 2; /* qh bits of the low- and high-nibble sub-blocks */
    for (int is = 0; is < QK_K / 32; is += 2, ql += 32) {
      uint8_t sc, m;
      kiln_kquant_scale_min(b.scales, is, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      kiln_kquant_scale_min(b.scales, is + 1, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * ((ql[l] & 0xf) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * ((ql[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
      u1 = (uint8_t)(u1 << 2);
      u2 = (uint8_t)(u2 << 2);
    }
  }
}

void kiln_dequantize_row_q6_K(const void *src, float *y, uint64_t n) {
  const uint8_t *p = (const uint8_t *)src;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    kiln_block_q6_K_t b;
    memcpy(&b, p + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const uint8_t *ql = b.ql;
    const uint8_t *qh = b.qh;
    const int8_t *sc = b.scales;
    for (int half = 0; half < QK_K / 128; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        /* (d * scale) * q, left to right as in ggml */
        y[l] = d * sc[is] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}
