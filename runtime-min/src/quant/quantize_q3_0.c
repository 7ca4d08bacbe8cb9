/* kiln runtime-min: the q3_0 encoder (kiln's own format, kiln/quant_blocks.h).
 *
 * A block's value is d * (q - 4) with q in 0..7, so the codes reach -4d .. 3d: one more
 * step on the negative side, as q4_0's -8 .. 7. The starting point is q4_0's rule scaled to
 * 3 bits (the element of largest magnitude, signed, lands on code 0: d = max / -4). With
 * only eight levels that rule wastes much of the range on one outlier, so a few more
 * scales are tried - that element mapped to -(4 + k/10) or +(3 + k/10) steps, and for each
 * the least-squares scale of the codes it gives (the idea of llama.cpp's make_qx_quants) -
 * and the one whose fp16-rounded scale, with every code re-rounded to it, has the least
 * squared error wins (the first on ties, so q4_0's rule when nothing beats it). No libm;
 * deterministic on every host.
 */
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"

#define Q3_STEPS 6 /* candidates k = -Q3_STEPS .. Q3_STEPS per sign */

/* round-half-away-from-zero of v clamped to the code range -4 .. 3; NaN gives 0 */
static int q3_code(float v) {
  if (!(v == v))
    return 0;
  if (v >= 3.0f)
    return 3;
  if (v <= -4.0f)
    return -4;
  int i = (int)v; /* truncates; |v| < 4 */
  const float frac = v - (float)i;
  if (frac >= 0.5f)
    ++i;
  else if (frac <= -0.5f)
    --i;
  return i;
}

/* d rounded to fp16 as stored, and the squared error of x against d16 * (nearest code) */
static float q3_error(const float *x, float d, uint16_t *out_d16) {
  *out_d16 = kiln_fp32_to_fp16(d);
  const float d16 = kiln_fp16_to_fp32(*out_d16);
  const float id = d16 != 0.0f ? 1.0f / d16 : 0.0f;
  float err = 0.0f;
  for (int j = 0; j < QK3_0; ++j) {
    const float e = x[j] - (float)q3_code(x[j] * id) * d16;
    err += e * e;
  }
  return err;
}

/* The least-squares scale for the codes that inverse scale `is` gives: sum(x q) / sum(q q). */
static float q3_fit(const float *x, float is) {
  float sxq = 0.0f, sqq = 0.0f;
  for (int j = 0; j < QK3_0; ++j) {
    const float q = (float)q3_code(x[j] * is);
    sxq += x[j] * q;
    sqq += q * q;
  }
  return sqq > 0.0f ? sxq / sqq : 0.0f;
}

static void quantize_block(const float *x, kiln_block_q3_0_t *b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QK3_0; ++j) {
    const float a = x[j] < 0.0f ? -x[j] : x[j];
    if (amax < a) {
      amax = a;
      max = x[j];
    }
  }
  uint16_t best16;
  float best = q3_error(x, max / -4.0f, &best16);
  /* a zero block is exact already; a non-finite one has nothing better to find */
  if (best > 0.0f && amax <= 3.4e38f) {
    for (int sign = 0; sign < 2; ++sign)
      for (int k = -Q3_STEPS; k <= Q3_STEPS; ++k) {
        const float steps = sign ? 3.0f + 0.1f * (float)k : -(4.0f + 0.1f * (float)k);
        const float is = steps / max;
        const float cands[2] = {1.0f / is, q3_fit(x, is)};
        for (int c = 0; c < 2; ++c) {
          uint16_t d16;
          const float err = q3_error(x, cands[c], &d16);
          if (err < best) {
            best = err;
            best16 = d16;
          }
        }
      }
  }
  const float d16 = kiln_fp16_to_fp32(best16);
  const float id = d16 != 0.0f ? 1.0f / d16 : 0.0f;
  uint8_t q[QK3_0];
  for (int j = 0; j < QK3_0; ++j)
    q[j] = (uint8_t)(q3_code(x[j] * id) + 4); /* 0..7 */
  kiln_pack_q3_0(b, best16, q);
}

void kiln_quantize_row_q3_0(const float *src, void *dst, uint64_t n) {
  uint8_t *out = (uint8_t *)dst;
  for (uint64_t i = 0; i < n / QK3_0; ++i) {
    kiln_block_q3_0_t b;
    quantize_block(src + i * QK3_0, &b);
    memcpy(out + i * sizeof b, &b, sizeof b);
  }
}
