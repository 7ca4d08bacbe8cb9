/* kiln runtime-min: the r16 and r32 repacked formats (layout in kiln/quant_packed.h). Moves bits
 * only, so packing ggml blocks is lossless and unpacking gives them back exactly. */
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "kiln/quant_packed.h"
#include "packed_kquant.h"

const char *kiln_packed_type_name(uint32_t type) {
  switch (type) {
  case KILN_TYPE_Q4_0_R16: return "q4_0_r16";
  case KILN_TYPE_Q4_1_R16: return "q4_1_r16";
  case KILN_TYPE_Q8_0_R16: return "q8_0_r16";
  case KILN_TYPE_Q4_0_R32: return "q4_0_r32";
  case KILN_TYPE_Q4_1_R32: return "q4_1_r32";
  case KILN_TYPE_Q8_0_R32: return "q8_0_r32";
  case KILN_TYPE_Q4_K_R16: return "q4_K_r16";
  case KILN_TYPE_Q5_K_R16: return "q5_K_r16";
  case KILN_TYPE_Q6_K_R16: return "q6_K_r16";
  default: return NULL;
  }
}

const char *kiln_format_name(uint32_t type) {
  const char *n = kiln_packed_type_name(type);
  return n ? n : kiln_ggml_type_name(type);
}

static int valid_args(uint32_t type, uint64_t row_length) {
  const uint64_t block = kiln_is_packed_kquant(type) ? KILN_PACK_SUPER : KILN_PACK_BLOCK;
  return kiln_is_packed(type) && row_length > 0 && row_length % block == 0;
}

kiln_status_t kiln_repack_packed(uint32_t type, const void *src, uint64_t src_row_stride,
                              uint64_t rows, uint64_t row_length, void *dst) {
  if (!valid_args(type, row_length) || !src || !dst)
    return KILN_STATUS_INVALID_ARGUMENT;
  const uint32_t base = kiln_packed_base_type(type);
  const uint64_t bb = kiln_ggml_block_bytes(base);
  const uint64_t gbytes = kiln_packed_group_bytes(type, row_length);
  const uint64_t nb = row_length / KILN_PACK_BLOCK;
  const uint64_t R = kiln_packed_rows(type), chunk = 4u * R;
  const uint64_t groups = (rows + R - 1) / R;
  memset(dst, 0, groups * gbytes); /* padding rows: d = m = 0, so every value is 0 */
  if (kiln_is_packed_kquant(type)) {
    for (uint64_t r = 0; r < rows; ++r)
      kiln_packed_kquant_put_row(type, (const uint8_t *)src + r * src_row_stride, r % R,
                                 row_length, (uint8_t *)dst + (r / R) * gbytes);
    return KILN_STATUS_OK;
  }
  for (uint64_t r = 0; r < rows; ++r) {
    uint8_t *g = (uint8_t *)dst + (r / R) * gbytes;
    const uint64_t lane = r % R;
    for (uint64_t b = 0; b < nb; ++b) {
      const uint8_t *blk = (const uint8_t *)src + r * src_row_stride + b * bb;
      uint8_t *codes = g + kiln_packed_codes_offset(type, b);
      memcpy(g + kiln_packed_scales_offset(type, b) + lane * 2u, blk, 2); /* d */
      if (base == KILN_GGML_TYPE_Q8_0) {
        for (int k = 0; k < 8; ++k)
          for (int j = 0; j < 4; ++j)
            codes[k * chunk + lane * 4 + j] = (uint8_t)(blk[2 + 4 * k + j] ^ 0x80u);
        continue;
      }
      const uint8_t *qs = blk + (base == KILN_GGML_TYPE_Q4_0 ? 2 : 4);
      if (base == KILN_GGML_TYPE_Q4_1)
        memcpy(g + kiln_packed_mins_offset(type, b) + lane * 2u, blk + 2, 2); /* m */
      /* ggml's qs[e] holds element e (low nibble) and e + 16 (high): byte j of chunk k
       * is qs[4k + j] unchanged */
      for (int k = 0; k < 4; ++k)
        memcpy(codes + k * chunk + lane * 4, qs + 4 * k, 4);
    }
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_dequantize_packed_row(uint32_t type, const void *packed, uint64_t row,
                                         uint64_t row_length, float *dst) {
  if (!valid_args(type, row_length) || !packed || !dst)
    return KILN_STATUS_INVALID_ARGUMENT;
  const uint32_t base = kiln_packed_base_type(type);
  const uint64_t nb = row_length / KILN_PACK_BLOCK;
  const uint64_t R = kiln_packed_rows(type), chunk = 4u * R;
  const uint8_t *g = (const uint8_t *)packed + (row / R) * kiln_packed_group_bytes(type, row_length);
  const uint64_t lane = row % R;
  if (kiln_is_packed_kquant(type)) { /* the ggml super-blocks, one at a time */
    uint8_t blk[sizeof(kiln_block_q6_K_t)]; /* the largest of the three */
    for (uint64_t s = 0; s < row_length / KILN_PACK_SUPER; ++s) {
      kiln_packed_kquant_get_super(type, g, lane, s, blk);
      kiln_status_t st = kiln_dequantize(base, blk, dst + s * KILN_PACK_SUPER, KILN_PACK_SUPER);
      if (st != KILN_STATUS_OK)
        return st;
    }
    return KILN_STATUS_OK;
  }
  /* rebuild the ggml block and decode it with the reference decoder */
  for (uint64_t b = 0; b < nb; ++b) {
    const uint8_t *codes = g + kiln_packed_codes_offset(type, b);
    uint8_t blk[34];
    memcpy(blk, g + kiln_packed_scales_offset(type, b) + lane * 2u, 2);
    if (base == KILN_GGML_TYPE_Q8_0) {
      for (int k = 0; k < 8; ++k)
        for (int j = 0; j < 4; ++j)
          blk[2 + 4 * k + j] = (uint8_t)(codes[k * chunk + lane * 4 + j] ^ 0x80u);
    } else {
      uint8_t *qs = blk + (base == KILN_GGML_TYPE_Q4_0 ? 2 : 4);
      if (base == KILN_GGML_TYPE_Q4_1)
        memcpy(blk + 2, g + kiln_packed_mins_offset(type, b) + lane * 2u, 2);
      for (int k = 0; k < 4; ++k)
        memcpy(qs + 4 * k, codes + k * chunk + lane * 4, 4);
    }
    kiln_status_t st = kiln_dequantize(base, blk, dst + b * KILN_PACK_BLOCK, KILN_PACK_BLOCK);
    if (st != KILN_STATUS_OK)
      return st;
  }
  return KILN_STATUS_OK;
}
