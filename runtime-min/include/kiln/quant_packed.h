/* kiln runtime-min: kiln's own repacked weight formats ("r16" and "r32"), beside ggml's
 * type ids.
 *
 * A repacked matrix is stored in groups of R consecutive rows (R = kiln_packed_rows: 16 for
 * the _r16 formats, 32 for _r32); rows past the last real one are zero. Within a group of
 * nb = ceil(row_length / 32) blocks, one stream of units, each a header of 4R bytes (one
 * 64-byte line for r16, one 128-byte HVX vector for r32) and then the codes of its blocks:
 *
 *   q4_0_rR, q8_0_rR  unit = 2 blocks: [R fp16 scales d of block 2u | of block 2u + 1]
 *                     [codes of block 2u][codes of block 2u + 1]
 *   q4_1_rR           unit = 1 block:  [R fp16 scales d | R fp16 minimums m][codes]
 *   (codes: 16R bytes per block for q4, 32R for q8; with an odd nb the last q4_0/q8_0 unit
 *   holds one block and half a header; zero padding up to a multiple of 4R bytes: the
 *   group stride, the same bytes as storing scales and codes apart)
 * A single forward stream: decode reads a model once per token, and with the scales in a
 * second stream beside the codes the same loads ran at ~70% of the bandwidth one stream
 * reaches (tests/bench/linear_packed_bench.c); kept in separate regions a power-of-two
 * row length also put the two streams a multiple of 4 KiB apart (L1 set conflicts).
 *
 * A block's codes are chunks of 4R bytes (r16: one cache line; r32: one HVX vector). Byte
 * 4r + j of chunk k holds
 *   q4_0_rR / q4_1_rR (chunks k = 0..3): element 4k + j of row r in the low nibble and
 *            element 16 + 4k + j in the high nibble (4-bit codes c, ggml's values);
 *   q8_0_rR (chunks k = 0..7): element 4k + j of row r as q ^ 0x80 (q + 128, unsigned).
 * So one 32-bit lane of a chunk is 4 consecutive weights of one row: a u8 x s8 dot product
 * instruction (vpdpbusd, HVX vrmpy) with 4 activation bytes broadcast to every lane
 * accumulates R rows at once, and the block's scales are one 2R-byte load. R is the
 * target's choice (kiln-assign-layout reads it from the chip profile): 16 rows fill a
 * 512-bit register or four NEON registers, 32 rows one 128-byte HVX vector. Element values are ggml's:
 * q4_0 (c - 8) * d, q4_1 c * d + m, q8_0 q * d. Converting from ggml's q4_0/q4_1/q8_0 blocks
 * is lossless (kiln_repack_packed moves bits only).
 */
#ifndef KILN_QUANT_PACKED_H_
#define KILN_QUANT_PACKED_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format ids: 1000 (r16) or 2000 (r32) + the ggml id of the block format they repack (ggml
 * ids stay < 1000). */
#define KILN_TYPE_Q4_0_R16 1002u
#define KILN_TYPE_Q4_1_R16 1003u
#define KILN_TYPE_Q8_0_R16 1008u
#define KILN_TYPE_Q4_0_R32 2002u
#define KILN_TYPE_Q4_1_R32 2003u
#define KILN_TYPE_Q8_0_R32 2008u

#define KILN_PACK_BLOCK 32

/* The K-quants in groups of 16 rows (layout below); rows of whole 256-element super-blocks. */
#define KILN_TYPE_Q4_K_R16 1012u
#define KILN_TYPE_Q5_K_R16 1013u
#define KILN_TYPE_Q6_K_R16 1014u

static inline int kiln_is_packed_kquant(uint32_t type) {
  return type == KILN_TYPE_Q4_K_R16 || type == KILN_TYPE_Q5_K_R16 || type == KILN_TYPE_Q6_K_R16;
}
static inline int kiln_is_packed_r16(uint32_t type) {
  return type == KILN_TYPE_Q4_0_R16 || type == KILN_TYPE_Q4_1_R16 || type == KILN_TYPE_Q8_0_R16 ||
         kiln_is_packed_kquant(type);
}
static inline int kiln_is_packed_r32(uint32_t type) {
  return type == KILN_TYPE_Q4_0_R32 || type == KILN_TYPE_Q4_1_R32 || type == KILN_TYPE_Q8_0_R32;
}
/* Any repacked format (r16 or r32). */
static inline int kiln_is_packed(uint32_t type) {
  return kiln_is_packed_r16(type) || kiln_is_packed_r32(type);
}

/* Rows per group: 16, 32, or 0 for other ids. */
static inline uint32_t kiln_packed_rows(uint32_t type) {
  return kiln_is_packed_r16(type) ? 16u : kiln_is_packed_r32(type) ? 32u : 0u;
}

/* The ggml block format a packed format holds (q4_0, q4_1, q8_0, q4_K, q5_K, q6_K), 0 for other
 * ids. */
static inline uint32_t kiln_packed_base_type(uint32_t type) {
  return kiln_is_packed_r16(type) ? type - 1000u : kiln_is_packed_r32(type) ? type - 2000u : 0u;
}

/* The packed id of a ggml block format (q4_0, q4_1, q8_0; q4_K, q5_K, q6_K with 16 rows) in
 * groups of `rows` (16 or 32); 0 when there is none. */
static inline uint32_t kiln_packed_type(uint32_t base, uint32_t rows) {
  const uint32_t t = base + (rows == 16u ? 1000u : rows == 32u ? 2000u : 0u);
  return rows && kiln_is_packed(t) ? t : 0u;
}

/* Bytes of codes per block of a group (16R for q4, 32R for q8). */
static inline uint64_t kiln_packed_code_bytes(uint32_t type) {
  return (uint64_t)kiln_packed_rows(type) *
         (kiln_packed_base_type(type) == 8u /* q8_0 */ ? 32u : 16u);
}

/* Blocks per unit (see the layout above) and bytes of a full unit. */
static inline uint64_t kiln_packed_unit_blocks(uint32_t type) {
  return kiln_packed_base_type(type) == 3u /* q4_1 */ ? 1u : 2u;
}
static inline uint64_t kiln_packed_unit_bytes(uint32_t type) {
  return 4u * kiln_packed_rows(type) +
         kiln_packed_unit_blocks(type) * kiln_packed_code_bytes(type);
}

/* Byte offsets inside a group of block b's R scales, R minimums (q4_1) and codes. */
static inline uint64_t kiln_packed_scales_offset(uint32_t type, uint64_t b) {
  const uint64_t ub = kiln_packed_unit_blocks(type);
  return b / ub * kiln_packed_unit_bytes(type) + b % ub * 2u * kiln_packed_rows(type);
}
static inline uint64_t kiln_packed_mins_offset(uint32_t type, uint64_t b) {
  return kiln_packed_scales_offset(type, b) + 2u * kiln_packed_rows(type);
}
static inline uint64_t kiln_packed_codes_offset(uint32_t type, uint64_t b) {
  const uint64_t ub = kiln_packed_unit_blocks(type);
  return b / ub * kiln_packed_unit_bytes(type) + 4u * kiln_packed_rows(type) +
         b % ub * kiln_packed_code_bytes(type);
}

/* The K-quant groups (q4_K_r16, q5_K_r16, q6_K_r16): 16 rows, every byte of their ggml blocks kept,
 * the codes in the chunks above so the same dot product instructions read them, and the
 * super-block scales unpacked to one row per lane:
 *
 *   q4_K_r16  per super-block s, 2304 bytes at s * 2304: [16 fp16 d][16 fp16 dmin]
 *             [8 x 16 bytes: sub-block j's 6-bit scale (low 4 bits in the low nibble) and
 *             min (high nibble) of each row][16 x uint32: bits 4j..4j+3 of row r's word
 *             hold the top 2 bits of scale j (bits 4j, 4j+1) and of min j]
 *             [8 sub-blocks x 4 chunks of codes, as q4_1_r16's; element values
 *             d * sc_j * q - dmin * m_j]
 *   q5_K_r16  q4_K_r16's with a fifth chunk after each sub-block's 4 (2816 bytes per
 *             super-block, 320 per sub-block): byte 4r + i holds the fifth bit of element
 *             4k + i at bit k and of element 16 + 4k + i at bit 4 + k (k = 0..3); q in 0..31
 *   q6_K_r16  units of 2 super-blocks: [16 fp16 d of super-block 2u | of 2u + 1], then each
 *             super-block's 3328 bytes: [8 x 32 int8 scales: sub-block j's scale of elements
 *             0..15 for 16 rows, then of 16..31][8 sub-blocks x 6 chunks: 4 of the codes'
 *             low 4 bits as q4_1_r16's, then 2 of their top 2 bits, byte 4r + i of the first
 *             holding element 4k + i's at bits 2k, 2k + 1 (k = 0..3), the second element
 *             16 + 4k + i's]; element values d * sc * (q - 32), q the 6-bit code. An odd
 *             count of super-blocks ends on a unit of one and half a header.
 * 64-byte aligned throughout, one forward stream; sizes equal the ggml rows' but for q6_K's
 * half header with an odd super-block count. */
#define KILN_PACK_SUPER 256u
#define KILN_Q4_K_R16_SUPER_BYTES 2304u
#define KILN_Q4_K_R16_CODES 256u /* offset of the codes in a q4_K_r16 super-block */
#define KILN_Q5_K_R16_SUPER_BYTES 2816u
#define KILN_Q5_K_R16_SUB_BYTES 320u /* a q5_K_r16 sub-block: 4 chunks of codes, 1 of bits */
#define KILN_Q6_K_R16_SUPER_BYTES 3328u
#define KILN_Q6_K_R16_CODES 256u /* offset of the codes in a q6_K_r16 super-block */
#define KILN_Q6_K_R16_SUB_BYTES 384u /* bytes of a q6_K_r16 sub-block's 6 chunks */

/* Byte offset in a group of super-block s (its scales; q4_K/q5_K_r16: its d and dmin). */
static inline uint64_t kiln_packed_super_offset(uint32_t type, uint64_t s) {
  return type == KILN_TYPE_Q4_K_R16   ? s * KILN_Q4_K_R16_SUPER_BYTES
         : type == KILN_TYPE_Q5_K_R16 ? s * KILN_Q5_K_R16_SUPER_BYTES
                                      : s / 2u * (64u + 2u * KILN_Q6_K_R16_SUPER_BYTES) + 64u +
                   s % 2u * KILN_Q6_K_R16_SUPER_BYTES;
}
/* q6_K_r16: byte offset in a group of super-block s's 16 fp16 d. */
static inline uint64_t kiln_packed_q6_k_d_offset(uint64_t s) {
  return s / 2u * (64u + 2u * KILN_Q6_K_R16_SUPER_BYTES) + s % 2u * 32u;
}

/* Bytes of one group of row_length elements (a multiple of 4R: 64 or 128), 0 for other
 * ids (and for a K-quant row that is not whole super-blocks). */
static inline uint64_t kiln_packed_group_bytes(uint32_t type, uint64_t row_length) {
  if (kiln_is_packed_kquant(type)) {
    if (row_length % KILN_PACK_SUPER)
      return 0;
    const uint64_t ns = row_length / KILN_PACK_SUPER;
    return type == KILN_TYPE_Q4_K_R16   ? ns * KILN_Q4_K_R16_SUPER_BYTES
           : type == KILN_TYPE_Q5_K_R16 ? ns * KILN_Q5_K_R16_SUPER_BYTES
                                        : ns * KILN_Q6_K_R16_SUPER_BYTES + (ns + 1u) / 2u * 64u;
  }
  if (!kiln_is_packed(type))
    return 0;
  const uint64_t rows = kiln_packed_rows(type);
  const uint64_t nb = (row_length + KILN_PACK_BLOCK - 1) / KILN_PACK_BLOCK;
  const uint64_t bytes = nb * (kiln_packed_code_bytes(type) +
                               2u * rows * (kiln_packed_base_type(type) == 3u ? 2u : 1u));
  return (bytes + 4u * rows - 1u) / (4u * rows) * (4u * rows);
}

/* Bytes per token of the int8 activations kiln_uk_linear_packed quantises for a row of
 * `in` floats (codes, then per 32-block a float scale, an int32 code sum, a float
 * scale * sum and an int32 -8 * sum), a multiple of 64; the caller gives n tokens' worth
 * of scratch. */
static inline uint64_t kiln_packed_act_stride(uint64_t in) {
  const uint64_t nb = (in + KILN_PACK_BLOCK - 1) / KILN_PACK_BLOCK;
  return (nb * (KILN_PACK_BLOCK + 16u) + 63u) / 64u * 64u;
}

/* Name ("q4_0_r16", "q8_0_r32", ...) or NULL. */
const char *kiln_packed_type_name(uint32_t type);

/* Name of any format kiln stores: ggml's names and the packed ones; NULL when unknown. */
const char *kiln_format_name(uint32_t type);

/* Repacks `rows` rows of `src` (ggml q4_0 / q4_1 / q8_0 rows of row_length elements, a
 * multiple of 32, or q4_K / q6_K rows of whole 256-element super-blocks, src_row_stride
 * bytes apart) into `type` (the matching _r16 or _r32 format) at dst: ceil(rows / R) groups
 * of kiln_packed_group_bytes(type, row_length) bytes. Lossless. Fails with
 * KILN_STATUS_INVALID_ARGUMENT for a mismatched type or a row length that is not whole
 * blocks. */
kiln_status_t kiln_repack_packed(uint32_t type, const void *src, uint64_t src_row_stride,
                              uint64_t rows, uint64_t row_length, void *dst);

/* Decodes row `row` of a packed matrix (dst: row_length floats, a multiple of 32), the
 * values kiln_dequantize gives for the ggml blocks it was packed from. */
kiln_status_t kiln_dequantize_packed_row(uint32_t type, const void *packed, uint64_t row,
                                         uint64_t row_length, float *dst);

#ifdef __cplusplus
}
#endif

#endif /* KILN_QUANT_PACKED_H_ */
