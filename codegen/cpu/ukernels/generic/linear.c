/* kiln micro-kernels, portable C: linear (y = x W^T) for f32, f16, q8_0, q4_0, q4_1, q3_0,
 * q4_K, q5_K and q6_K weights.
 *
 * Weights are decoded 32 elements at a time (one block) into floats - exactly, since a
 * q8_0/q4_0 weight is an integer times an fp16 scale and a q4_1 weight rounds once as in
 * kiln_dequantize - and multiplied into eight lane accumulators per (row, token), which
 * the SLP vectoriser turns into one vector register. Tokens are taken two at a time (a
 * constant count, so the accumulators stay in registers), each decoded group serving both.
 * Every output element is computed by the same sequence of operations whatever the tiling
 * or the task split, so results do not depend on the thread count.
 *
 * Rows are split into tasks over ctx->parallel_for once the work reaches
 * KILN_UK_LINEAR_PARALLEL_MIN_WORK multiply-adds.
 */
#include "common.h"
#include "ukernel_abi.h"

#define GROUP 32 /* decoded per step: one q8_0/q4_0/q4_1 block */
#define LANES 8
#define TOKEN_TILE 2 /* more token accumulators than this spill on 16-register ISAs */
_Static_assert(TOKEN_TILE == 2, "linear_rows handles the token remainder for a tile of 2");

/* Decodes elements [i0, i0 + count) of a row (i0 a multiple of GROUP) into dst; block
 * formats decode the whole group (its padding elements are never multiplied with x). */
KILN_UK_INLINE void decode_group(uint32_t format, const uint8_t *row, int32_t i0, int32_t count,
                                 float *dst) {
  if (format == KILN_GGML_TYPE_F32) {
    const kiln_uk_uf32_t *p = (const kiln_uk_uf32_t *)row + i0;
    for (int32_t j = 0; j < count; ++j)
      dst[j] = p[j];
  } else if (format == KILN_GGML_TYPE_F16) {
    const kiln_uk_uu16_t *p = (const kiln_uk_uu16_t *)row + i0;
    /* the loop vectoriser handles this conversion, the SLP one does not after a full unroll */
    KILN_UK_NO_UNROLL
    for (int32_t j = 0; j < count; ++j)
      dst[j] = kiln_uk_fp16_to_fp32(p[j]);
  } else if (format == KILN_GGML_TYPE_Q4_0 || format == KILN_GGML_TYPE_Q4_1) {
    kiln_uk_decode_q4(format, row + (int64_t)(i0 / GROUP) * kiln_uk_block_bytes(format), dst);
  } else if (format == KILN_TYPE_Q3_0) {
    kiln_uk_decode_q3(row + (int64_t)(i0 / GROUP) * (int64_t)sizeof(kiln_block_q3_0_t), dst);
  } else if (kiln_uk_is_kquant(format)) {
    kiln_uk_decode_kquant(format, row, i0, dst);
  } else { /* q8_0 */
    const uint8_t *b = row + (int64_t)(i0 / QK8_0) * (int64_t)sizeof(kiln_block_q8_0_t);
    const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b));
    const int8_t *q = (const int8_t *)(b + 2);
    for (int32_t j = 0; j < count; ++j)
      dst[j] = (float)q[j] * d;
  }
}

KILN_UK_INLINE float reduce_lanes(const float *a) {
  return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* y[t0..t0+nt, r] for one row; nt <= TOKEN_TILE. */
KILN_UK_INLINE void row_tokens(const linear_args_t *a, uint32_t format, int32_t mode,
                               const uint8_t *row,
                               int64_t r, int32_t t0, int32_t nt) {
  float acc[TOKEN_TILE][LANES];
  float wbuf[GROUP];
  for (int32_t t = 0; t < TOKEN_TILE; ++t)
    for (int32_t j = 0; j < LANES; ++j)
      acc[t][j] = 0.0f;
  const int32_t in = a->in;
  int32_t i0 = 0;
  for (; i0 + GROUP <= in; i0 += GROUP) {
    decode_group(format, row, i0, GROUP, wbuf);
    for (int32_t t = 0; t < nt; ++t) {
      const float *xt = a->x + (int64_t)(t0 + t) * in + i0;
      for (int32_t k = 0; k < GROUP; k += LANES)
        for (int32_t j = 0; j < LANES; ++j)
          acc[t][j] += wbuf[k + j] * xt[k + j];
    }
  }
  if (i0 < in) { /* last partial group: never read x (or f32/f16 weights) past `in` */
    const int32_t count = in - i0;
    decode_group(format, row, i0, count, wbuf);
    for (int32_t t = 0; t < nt; ++t) {
      const float *xt = a->x + (int64_t)(t0 + t) * in + i0;
      for (int32_t j = 0; j < count; ++j)
        acc[t][j % LANES] += wbuf[j] * xt[j];
    }
  }
  for (int32_t t = 0; t < nt; ++t)
    kiln_uk_linear_store(&a->ep, mode, t0 + t, r, reduce_lanes(acc[t]));
}

KILN_UK_INLINE void linear_rows(const linear_args_t *a, uint32_t format, int32_t mode,
                                int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t *row = a->w + r * a->row_stride;
    int32_t t0 = 0;
    for (; t0 + TOKEN_TILE <= a->n; t0 += TOKEN_TILE)
      row_tokens(a, format, mode, row, r, t0, TOKEN_TILE);
    if (t0 < a->n) /* one token left (TOKEN_TILE is 2), again a constant count */
      row_tokens(a, format, mode, row, r, t0, 1);
  }
}

#include "linear_entry.h"
