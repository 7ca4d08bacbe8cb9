/* kiln micro-kernels, portable C: embedding lookup (decode one table row per token).
 *
 * Formats: f32, f16, q8_0, q4_0, q4_1 and q3_0 (a row of dim elements in ceil(dim/32) blocks,
 * the last one zero-padded) and q4_K/q5_K/q6_K (ceil(dim/256) super-blocks), and a tied
 * table the classifier reads in 16-row groups (q4_0/q4_1/q8_0/q4_K/q5_K/q6_K_r16); exactly
 * the values kiln_dequantize gives. Token ids were range-checked by the generated entry point.
 * Serial: it moves n * dim floats, far less than a thread hand-off costs.
 */
#include "common.h"
#include "kquant_r16.h"
#include "ukernel_abi.h"

/* Row `lane` of a q4_K_r16 / q5_K_r16 / q6_K_r16 group (kiln/quant_packed.h): the values
 * kiln_uk_decode_kquant gives for the ggml row, by the same float steps. */
static void embed_kquant_r16(uint32_t format, const uint8_t *grp, int32_t lane, int32_t dim,
                             float *o) {
  for (int32_t i0 = 0; i0 < dim; i0 += 32) {
    const int32_t s = i0 / 256, j = i0 % 256 / 32;
    const uint8_t *sb = grp + kiln_packed_super_offset(format, (uint64_t)s);
    if (format != KILN_TYPE_Q6_K_R16) { /* q4_K, q5_K */
      int32_t sc, m;
      kq4_scale_min(sb, lane, j, &sc, &m);
      const float d1 = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(sb + lane * 2)) * (float)sc;
      const float m1 = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(sb + 32 + lane * 2)) * (float)m;
      if (format == KILN_TYPE_Q5_K_R16) {
        const uint8_t *codes = sb + KILN_Q4_K_R16_CODES + j * KILN_Q5_K_R16_SUB_BYTES;
        for (int32_t e = 0; e < 32; ++e)
          o[i0 + e] = d1 * (float)kq5_code(codes, lane, e) - m1;
        continue;
      }
      const uint8_t *codes = sb + KILN_Q4_K_R16_CODES + j * 256 + lane * 4;
      for (int32_t e = 0; e < 16; ++e) {
        const uint8_t c = codes[e / 4 * 64 + e % 4];
        o[i0 + e] = d1 * (float)(c & 15) - m1;
        o[i0 + 16 + e] = d1 * (float)(c >> 4) - m1;
      }
    } else {
      const float d =
          kiln_uk_fp16_to_fp32(kiln_uk_load_u16(grp + kiln_packed_q6_k_d_offset((uint64_t)s) +
                                                lane * 2));
      const uint8_t *codes = sb + KILN_Q6_K_R16_CODES + j * KILN_Q6_K_R16_SUB_BYTES;
      for (int32_t e = 0; e < 32; ++e) {
        const int32_t q = kq6_code(codes, lane, e) - 32;
        o[i0 + e] = d * (float)(int8_t)sb[j * 32 + (e < 16 ? 0 : 16) + lane] * (float)q;
      }
    }
  }
}

/* Row `lane` of a q4_0_r16 / q4_1_r16 / q8_0_r16 group: each block's ggml bytes gathered
 * from the group and decoded as the plain rows are (the values kiln_dequantize gives). */
static void embed_block_r16(uint32_t format, const uint8_t *grp, int32_t lane, int32_t dim,
                            float *o) {
  const uint32_t base = kiln_packed_base_type(format);
  float tmp[32];
  for (int32_t i0 = 0, b = 0; i0 < dim; i0 += 32, ++b) {
    const uint8_t *codes = grp + kiln_packed_codes_offset(format, (uint64_t)b) + lane * 4;
    const uint8_t *d = grp + kiln_packed_scales_offset(format, (uint64_t)b) + lane * 2;
    if (base == KILN_GGML_TYPE_Q8_0) { /* codes biased by 128 */
      const float df = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(d));
      for (int32_t e = 0; e < 32; ++e)
        tmp[e] = (float)(int8_t)(codes[e / 4 * 64 + e % 4] ^ 0x80u) * df;
    } else { /* nibble j: element j (low) and 16 + j (high), as in a ggml block */
      uint8_t blk[20];
      const int32_t head = base == KILN_GGML_TYPE_Q4_1 ? 4 : 2;
      blk[0] = d[0], blk[1] = d[1];
      if (base == KILN_GGML_TYPE_Q4_1) {
        const uint8_t *m = grp + kiln_packed_mins_offset(format, (uint64_t)b) + lane * 2;
        blk[2] = m[0], blk[3] = m[1];
      }
      for (int32_t j = 0; j < 16; ++j)
        blk[head + j] = codes[j / 4 * 64 + j % 4];
      kiln_uk_decode_q4(base, blk, tmp);
    }
    const int32_t count = KILN_UK_MIN(32, dim - i0);
    for (int32_t j = 0; j < count; ++j)
      o[i0 + j] = tmp[j];
  }
}

void kiln_uk_embed(const kiln_exec_ctx_t *ctx, uint32_t format, const uint8_t *table,
                   int64_t row_stride, int32_t dim, const int32_t *ids, int32_t n, float *out) {
  (void)ctx;
  for (int32_t t = 0; t < n; ++t) {
    const uint8_t *row = table + (int64_t)ids[t] * row_stride;
    float *o = out + (int64_t)t * dim;
    if (kiln_is_packed_r16(format)) { /* a tied table in 16-row groups; row_stride: a group's */
      const uint8_t *grp = table + (int64_t)(ids[t] / 16) * row_stride;
      if (kiln_is_packed_kquant(format))
        embed_kquant_r16(format, grp, ids[t] % 16, dim, o);
      else
        embed_block_r16(format, grp, ids[t] % 16, dim, o);
    } else if (format == KILN_GGML_TYPE_F32) {
      const kiln_uk_uf32_t *p = (const kiln_uk_uf32_t *)row;
      for (int32_t i = 0; i < dim; ++i)
        o[i] = p[i];
    } else if (format == KILN_GGML_TYPE_F16) {
      const kiln_uk_uu16_t *p = (const kiln_uk_uu16_t *)row;
      for (int32_t i = 0; i < dim; ++i)
        o[i] = kiln_uk_fp16_to_fp32(p[i]);
    } else if (format == KILN_GGML_TYPE_Q4_0 || format == KILN_GGML_TYPE_Q4_1 ||
               format == KILN_TYPE_Q3_0 || kiln_uk_is_kquant(format)) {
      const int64_t block_bytes = kiln_uk_block_bytes(format);
      float tmp[32];
      for (int32_t i0 = 0; i0 < dim; i0 += 32) {
        if (kiln_uk_is_kquant(format))
          kiln_uk_decode_kquant(format, row, i0, tmp);
        else if (format == KILN_TYPE_Q3_0)
          kiln_uk_decode_q3(row + (int64_t)(i0 / 32) * block_bytes, tmp);
        else
          kiln_uk_decode_q4(format, row + (int64_t)(i0 / 32) * block_bytes, tmp);
        const int32_t count = KILN_UK_MIN(32, dim - i0);
        for (int32_t j = 0; j < count; ++j)
          o[i0 + j] = tmp[j];
      }
    } else { /* q8_0 */
      for (int32_t i0 = 0; i0 < dim; i0 += QK8_0) {
        const uint8_t *b = row + (int64_t)(i0 / QK8_0) * (int64_t)sizeof(kiln_block_q8_0_t);
        const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b));
        const int8_t *q = (const int8_t *)(b + 2);
        const int32_t count = KILN_UK_MIN(QK8_0, dim - i0);
        for (int32_t j = 0; j < count; ++j)
          o[i0 + j] = (float)q[j] * d;
      }
    }
  }
}
