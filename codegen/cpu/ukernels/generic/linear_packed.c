/* kiln micro-kernels, portable C: linear over the r16 repacked formats (q4_0_r16, q4_1_r16,
 * q8_0_r16; layout in kiln/quant_packed.h), so every target can run them.
 *
 * x is quantised to int8 blocks (packed_common.h); per 16-row group, token and block the
 * 16 integer dot products are exact int32 sums of u8 weight codes times s8 activations,
 * then corrected for the codes' offset (q4_0: -8 * s, q8_0_r16's +128 bias: -128 * s) and
 * scaled in float once: y += isum * (d_w * d_x) (+ m_w * d_x * s for q4_1). The x86 file
 * does the same arithmetic with vector instructions. Tasks split the row groups, so results
 * do not depend on the thread count.
 */
#include "packed_common.h"
#include "ukernel_abi.h"

#define ROWS KILN_PACK_ROWS

/* The one place a tile's results reach y: `count` (<= 16) rows of one token. */
KILN_UK_INLINE void packed_store(float *y, const float *acc, int32_t count) {
  for (int32_t r = 0; r < count; ++r)
    y[r] = acc[r];
}

/* y for group g and token t. */
KILN_UK_INLINE void group_token(const packed_args_t *a, uint32_t format, int64_t g, int32_t t) {
  const uint8_t *grp = a->w + g * a->group_stride;
  const qact_t xq = packed_qact(a, t);
  float acc[ROWS];
  for (int32_t r = 0; r < ROWS; ++r)
    acc[r] = 0.0f;
  for (int32_t b = 0; b < a->nb; ++b) {
    const uint8_t *codes = grp + kiln_packed_codes_offset(format, (uint64_t)b);
    const uint8_t *scales = grp + kiln_packed_scales_offset(format, (uint64_t)b);
    const uint8_t *mins = grp + kiln_packed_mins_offset(format, (uint64_t)b); /* q4_1 */
    const int8_t *xb = xq.q + b * KILN_PACK_BLOCK;
    int32_t isum[ROWS];
    for (int32_t r = 0; r < ROWS; ++r)
      isum[r] = 0;
    if (format == KILN_TYPE_Q8_0_R16) {
      for (int32_t k = 0; k < 8; ++k)
        for (int32_t r = 0; r < ROWS; ++r)
          for (int32_t j = 0; j < 4; ++j)
            isum[r] += (int32_t)codes[k * 64 + r * 4 + j] * xb[4 * k + j];
    } else {
      for (int32_t k = 0; k < 4; ++k)
        for (int32_t r = 0; r < ROWS; ++r)
          for (int32_t j = 0; j < 4; ++j) {
            const int32_t c = codes[k * 64 + r * 4 + j];
            isum[r] += (c & 15) * xb[4 * k + j] + (c >> 4) * xb[16 + 4 * k + j];
          }
    }
    const int32_t offset = format == KILN_TYPE_Q8_0_R16   ? 128 * xq.s[b]
                           : format == KILN_TYPE_Q4_0_R16 ? 8 * xq.s[b]
                                                          : 0;
    for (int32_t r = 0; r < ROWS; ++r) {
      const float dw = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(scales + r * 2));
      acc[r] += (float)(isum[r] - offset) * (dw * xq.d[b]);
      if (format == KILN_TYPE_Q4_1_R16)
        acc[r] += kiln_uk_fp16_to_fp32(kiln_uk_load_u16(mins + r * 2)) * xq.ds[b];
    }
  }
  const int64_t r0 = g * ROWS;
  const int32_t count = (int32_t)KILN_UK_MIN((int64_t)ROWS, a->out_features - r0);
  if (a->mode == KILN_UK_STORE_PLAIN)
    packed_store(a->y + (int64_t)t * a->out_features + r0, acc, count);
  else
    packed_store_fused(a, t, r0, acc, count);
}

KILN_UK_INLINE void packed_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                  int64_t g1) {
  for (int64_t g = g0; g < g1; ++g)
    for (int32_t t = 0; t < a->n; ++t)
      group_token(a, format, g, t);
}

#include "linear_packed_entry.h"
