/* kiln runtime-min: kiln's own repacked weight formats ("r16"), beside ggml's type ids.
 *
 * A repacked matrix is stored in groups of KILN_PACK_ROWS (16) consecutive rows; rows past
 * the last real one are zero. Within a group of nb = ceil(row_length / 32) blocks, one
 * stream of units, each a 64-byte header line and then the codes of its blocks:
 *
 *   q4_0_r16, q8_0_r16  unit = 2 blocks: [16 fp16 scales d of block 2u | of block 2u + 1]
 *                       [codes of block 2u][codes of block 2u + 1]
 *   q4_1_r16            unit = 1 block:  [16 fp16 scales d | 16 fp16 minimums m][codes]
 *   (codes: 256 B per block for q4, 512 B for q8; with an odd nb the last q4_0/q8_0 unit
 *   holds one block and half a header; zero padding up to a multiple of 64 bytes: the
 *   group stride, the same bytes as storing scales and codes apart)
 * A single forward stream: decode reads a model once per token, and with the scales in a
 * second stream beside the codes the same loads ran at ~70% of the bandwidth one stream
 * reaches (tests/bench/linear_packed_bench.c); kept in separate regions a power-of-two
 * row length also put the two streams a multiple of 4 KiB apart (L1 set conflicts).
 *
 * A block's codes are chunks of 64 bytes (one cache line). Byte 4r + j of chunk k holds
 *   q4_0_r16 / q4_1_r16 (chunks k = 0..3): element 4k + j of row r in the low nibble and
 *            element 16 + 4k + j in the high nibble (4-bit codes c, ggml's values);
 *   q8_0_r16 (chunks k = 0..7): element 4k + j of row r as q ^ 0x80 (q + 128, unsigned).
 * So one 32-bit lane of a chunk is 4 consecutive weights of one row: a u8 x s8 dot product
 * instruction (vpdpbusd) with 4 activation bytes broadcast to every lane accumulates 16
 * rows at once, and the block's scales are one 32-byte load. Element values are ggml's:
 * q4_0 (c - 8) * d, q4_1 c * d + m, q8_0 q * d. Converting from ggml's q4_0/q4_1/q8_0 blocks
 * is lossless (kiln_repack_r16 moves bits only).
 */
#ifndef KILN_QUANT_PACKED_H_
#define KILN_QUANT_PACKED_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format ids: 1000 + the ggml id of the block format they repack (ggml ids stay < 1000). */
#define KILN_TYPE_Q4_0_R16 1002u
#define KILN_TYPE_Q4_1_R16 1003u
#define KILN_TYPE_Q8_0_R16 1008u

#define KILN_PACK_ROWS 16
#define KILN_PACK_BLOCK 32

static inline int kiln_is_packed_r16(uint32_t type) {
  return type == KILN_TYPE_Q4_0_R16 || type == KILN_TYPE_Q4_1_R16 || type == KILN_TYPE_Q8_0_R16;
}

/* The ggml block format a packed format holds (q4_0, q4_1, q8_0), 0 for other ids. */
static inline uint32_t kiln_packed_base_type(uint32_t type) {
  return kiln_is_packed_r16(type) ? type - 1000u : 0u;
}

/* Bytes of codes per block of 16 rows. */
static inline uint64_t kiln_packed_code_bytes(uint32_t type) {
  return type == KILN_TYPE_Q8_0_R16 ? 512u : 256u;
}

/* Blocks per unit (see the layout above) and bytes of a full unit. */
static inline uint64_t kiln_packed_unit_blocks(uint32_t type) {
  return type == KILN_TYPE_Q4_1_R16 ? 1u : 2u;
}
static inline uint64_t kiln_packed_unit_bytes(uint32_t type) {
  return 64u + kiln_packed_unit_blocks(type) * kiln_packed_code_bytes(type);
}

/* Byte offsets inside a group of block b's 16 scales, 16 minimums (q4_1_r16) and codes. */
static inline uint64_t kiln_packed_scales_offset(uint32_t type, uint64_t b) {
  const uint64_t ub = kiln_packed_unit_blocks(type);
  return b / ub * kiln_packed_unit_bytes(type) + b % ub * 32u;
}
static inline uint64_t kiln_packed_mins_offset(uint32_t type, uint64_t b) {
  return kiln_packed_scales_offset(type, b) + 32u;
}
static inline uint64_t kiln_packed_codes_offset(uint32_t type, uint64_t b) {
  const uint64_t ub = kiln_packed_unit_blocks(type);
  return b / ub * kiln_packed_unit_bytes(type) + 64u + b % ub * kiln_packed_code_bytes(type);
}

/* Bytes of one 16-row group of row_length elements (a multiple of 64), 0 for other ids. */
static inline uint64_t kiln_packed_group_bytes(uint32_t type, uint64_t row_length) {
  if (!kiln_is_packed_r16(type))
    return 0;
  const uint64_t nb = (row_length + KILN_PACK_BLOCK - 1) / KILN_PACK_BLOCK;
  const uint64_t bytes =
      nb * (kiln_packed_code_bytes(type) + 32u + (type == KILN_TYPE_Q4_1_R16 ? 32u : 0u));
  return (bytes + 63u) / 64u * 64u;
}

/* Bytes per token of the int8 activations kiln_uk_linear_packed quantises for a row of
 * `in` floats (codes, then per 32-block a float scale, an int32 code sum and a float
 * scale * sum), a multiple of 64; the caller gives n tokens' worth of scratch. */
static inline uint64_t kiln_packed_act_stride(uint64_t in) {
  const uint64_t nb = (in + KILN_PACK_BLOCK - 1) / KILN_PACK_BLOCK;
  return (nb * (KILN_PACK_BLOCK + 12u) + 63u) / 64u * 64u;
}

/* Name ("q4_0_r16", ...) or NULL. */
const char *kiln_packed_type_name(uint32_t type);

/* Name of any format kiln stores: ggml's names and the packed ones; NULL when unknown. */
const char *kiln_format_name(uint32_t type);

/* Repacks `rows` rows of `src` (ggml q4_0 / q4_1 / q8_0 rows of row_length elements, a
 * multiple of 32, src_row_stride bytes apart) into `type` (the matching _r16 format) at
 * dst: ceil(rows / 16) groups of kiln_packed_group_bytes(type, row_length) bytes. Lossless.
 * Fails with KILN_STATUS_INVALID_ARGUMENT for a mismatched type or a row length that is not
 * whole blocks. */
kiln_status_t kiln_repack_r16(uint32_t type, const void *src, uint64_t src_row_stride,
                              uint64_t rows, uint64_t row_length, void *dst);

/* Decodes row `row` of a packed matrix (dst: row_length floats, a multiple of 32), the
 * values kiln_dequantize gives for the ggml blocks it was packed from. */
kiln_status_t kiln_dequantize_packed_row(uint32_t type, const void *packed, uint64_t row,
                                         uint64_t row_length, float *dst);

#ifdef __cplusplus
}
#endif

#endif /* KILN_QUANT_PACKED_H_ */
