/* kiln runtime-min: GGUF/ggml tensor storage formats and their fp32 decoders.
 *
 * Type ids are ggml's (the numbers stored in GGUF tensor infos) and are never reused.
 * Block layouts live in kiln/quant_blocks.h, one plain struct per format with a
 * static_assert on its size. Decoding is bit-exact with ggml's `to_float` routines.
 */
#ifndef KILN_QUANT_H_
#define KILN_QUANT_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_ggml_type_e {
  KILN_GGML_TYPE_F32 = 0,
  KILN_GGML_TYPE_F16 = 1,
  KILN_GGML_TYPE_Q4_0 = 2,
  KILN_GGML_TYPE_Q4_1 = 3,
  KILN_GGML_TYPE_Q5_0 = 6,
  KILN_GGML_TYPE_Q5_1 = 7,
  KILN_GGML_TYPE_Q8_0 = 8,
  KILN_GGML_TYPE_Q2_K = 10,
  KILN_GGML_TYPE_Q3_K = 11,
  KILN_GGML_TYPE_Q4_K = 12,
  KILN_GGML_TYPE_Q5_K = 13,
  KILN_GGML_TYPE_Q6_K = 14,
  KILN_GGML_TYPE_IQ4_NL = 20,
  KILN_GGML_TYPE_IQ4_XS = 23,
  KILN_GGML_TYPE_BF16 = 30,
} kiln_ggml_type_t;

/* kiln's own block formats. ggml ids stay below 1000 and 1000 + a ggml id is that
 * format's r16 repacking (kiln/quant_packed.h), so kiln's formats start at 1100; they
 * never appear in a GGUF file. */
#define KILN_TYPE_Q3_0 1100u /* 32 x 3-bit codes, fp16 scale: 3.5 bits per weight */

/* Name as ggml spells it ("q4_0", "q6_K", ...; "q3_0" for KILN_TYPE_Q3_0), or NULL for an
 * id kiln does not decode. */
const char *kiln_ggml_type_name(uint32_t type);

/* Elements per block (1 for f32/f16/bf16) and bytes per block; 0 for an unknown id. */
size_t kiln_ggml_block_elems(uint32_t type);
size_t kiln_ggml_block_bytes(uint32_t type);

/* Bytes of a row of n elements. Fails with KILN_STATUS_INVALID_ARGUMENT when n is not a
 * multiple of the block size, KILN_STATUS_UNSUPPORTED for an unknown id and
 * KILN_STATUS_OUT_OF_RANGE on overflow. */
kiln_status_t kiln_ggml_row_bytes(uint32_t type, uint64_t n, uint64_t *out_bytes);

/* Decodes n elements (a multiple of the block size) from src into dst as fp32. */
kiln_status_t kiln_dequantize(uint32_t type, const void *src, float *dst, uint64_t n);

/* IEEE half / bfloat16 to float, exact. */
float kiln_fp16_to_fp32(uint16_t h);
float kiln_bf16_to_fp32(uint16_t h);

/* Per-format row decoders behind kiln_dequantize. They do not validate: n must be a
 * multiple of the format's block size and src must hold exactly n/block blocks (any
 * alignment). Prefer kiln_dequantize. */
void kiln_dequantize_row_q2_K(const void *src, float *dst, uint64_t n);
void kiln_dequantize_row_q3_K(const void *src, float *dst, uint64_t n);
void kiln_dequantize_row_q4_K(const void *src, float *dst, uint64_t n);
void kiln_dequantize_row_q5_K(const void *src, float *dst, uint64_t n);
void kiln_dequantize_row_q6_K(const void *src, float *dst, uint64_t n);
void kiln_dequantize_row_iq4_nl(const void *src, float *dst, uint64_t n);
void kiln_dequantize_row_iq4_xs(const void *src, float *dst, uint64_t n);
/* The encoders behind kiln_quantize (same contract as the row decoders above): q3_0, and
 * ggml's reference K-quant quantizers (quantize_row_q4_K_ref, ..._q5_K_ref, ..._q6_K_ref:
 * the scales searched per sub-block), whose bytes equal ggml's. */
void kiln_quantize_row_q3_0(const float *src, void *dst, uint64_t n);
void kiln_quantize_row_q4_K(const float *src, void *dst, uint64_t n);
void kiln_quantize_row_q5_K(const float *src, void *dst, uint64_t n);
void kiln_quantize_row_q6_K(const float *src, void *dst, uint64_t n);

/* float to IEEE half, rounding to nearest even, subnormals included; overflow gives inf and
 * a NaN stays a NaN of the same sign (made quiet, the top 10 payload bits kept). Bit-exact
 * with F16C's vcvtps2ph (_cvtss_sh(x, 0)) and, for every non-NaN input, with ggml's
 * GGML_FP32_TO_FP16. */
uint16_t kiln_fp32_to_fp16(float f);

/* Encodes n floats (a multiple of the block size) from src into dst in `type`: F32, F16,
 * Q8_0, Q4_0, Q4_1, Q4_K, Q5_K or Q6_K, with ggml's reference algorithms
 * (quantize_row_q8_0_ref, ..., quantize_row_q6_K_ref), so the bytes equal ggml's; or
 * KILN_TYPE_Q3_0 (quantize_q3_0.c: the scale of least squared error among a few
 * candidates). dst receives exactly the bytes
 * kiln_ggml_row_bytes gives for n. Fails with KILN_STATUS_INVALID_ARGUMENT when n is not a
 * multiple of the block size or a buffer is NULL, KILN_STATUS_UNSUPPORTED for other types. */
kiln_status_t kiln_quantize(uint32_t type, const float *src, void *dst, uint64_t n);

#ifdef __cplusplus
}
#endif

#endif /* KILN_QUANT_H_ */
