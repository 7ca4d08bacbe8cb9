/* kiln micro-kernel ABI: the C functions generated model code calls.
 *
 * Written once per ISA in C (codegen/cpu/ukernels/{generic,x86,...}), compiled to LLVM
 * bitcode at build time and linked with the generated code, which calls them with
 * compile-time-constant shapes so LLVM can specialise them after inlining.
 *
 * Conventions:
 * - Activations are row-major f32 [n, width], contiguous (row i starts at i * width).
 * - Weights are [rows, row_length] in a storage format (ggml type id, kiln/quant.h); row r
 *   starts at w + r * row_stride bytes. A row holds ceil(row_length / block) blocks; any
 *   padding elements are zero, and kernels must not read activations past row_length.
 * - No allocation, no libc, no globals with state. Work that can run in parallel goes
 *   through ctx->parallel_for; a kernel may also run serially when the work is small.
 * - Out-of-range inputs (token ids, positions) are checked by the generated entry point
 *   before any kernel runs; kernels trust their arguments.
 */
#ifndef KILN_CODEGEN_COMMON_UKERNEL_ABI_H_
#define KILN_CODEGEN_COMMON_UKERNEL_ABI_H_

#include <stdint.h>

#include "kiln/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The generated entry point's input check (codegen/common/check_inputs.c), run once before
 * any kernel: 0, or -1 (n outside 1..max_batch), -2 (a token id outside the vocabulary),
 * -3 (a position outside the context). */
int32_t kiln_uk_check_inputs(const int32_t *tokens, const int32_t *positions, int32_t n,
                             int32_t vocab, int32_t max_ctx, int32_t max_batch);

/* out[t, :] = decode(table row ids[t]); table is [vocab, dim]. */
void kiln_uk_embed(const kiln_exec_ctx_t *ctx, uint32_t format, const uint8_t *table,
                   int64_t row_stride, int32_t dim, const int32_t *ids, int32_t n, float *out);

/* out[t, i] = x[t, i] / sqrt(mean_i(x[t, :]^2) + eps) * w[i]; sum of squares in double as
 * ggml does. w is `format` f32 or f16 (dim elements), or NULL: no
 * scale (kiln.rms_normalize). out may alias x. */
void kiln_uk_rms_norm(uint32_t format, const float *x, const uint8_t *w, int32_t n,
                      int32_t dim, float eps, float *out);

/* y[t, o] = sum_i x[t, i] * W[o, i], W [out_features, in] in `format` (f32, f16, q8_0,
 * q4_0, q4_1 or kiln's q3_0). */
void kiln_uk_linear(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x, int32_t n,
                    int32_t in, const uint8_t *w, int64_t row_stride, int32_t out_features,
                    float *y);

/* The fused linear (kiln.fused_linear): one pass over x and W [rows, in], z = x W^T, and
 * - output segments: row r < w0 goes to y0[t, r], r < w0 + w1 to y1[t, r - w0], the rest
 *   to y2[t, r - w0 - w1] (w0 + w1 + w2 = rows; unused segments have width 0, y NULL);
 * - residual (one segment; NULL for none): y0[t, r] = z[t, r] + residual[t, r]; residual
 *   may be y0 (the sum is written in place);
 * - swiglu (one segment, w0 = rows / 2, rows interleaved gate/up):
 *   y0[t, j] = silu(z[t, 2j]) * z[t, 2j + 1].
 * kiln_uk_linear is the case of one segment and no epilogue. */
void kiln_uk_linear_fused(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x,
                          int32_t n, int32_t in, const uint8_t *w, int64_t row_stride,
                          int32_t rows, float *y0, int32_t w0, float *y1, int32_t w1, float *y2,
                          int32_t w2, const float *residual, int32_t swiglu);

/* y[t, o] = sum_i x[t, i] * W[o, i] for W in a repacked 16-row format (q4_0_r16, q4_1_r16,
 * q8_0_r16; kiln/quant_packed.h), group_stride bytes per 16 rows. x is quantised to int8
 * blocks of 32 into qscratch (n * kiln_packed_act_stride(in) bytes, 64-byte aligned) and
 * multiplied with integer dot products; block scales are applied in float. */
void kiln_uk_linear_packed(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x,
                           int32_t n, int32_t in, const uint8_t *w, int64_t group_stride,
                           int32_t out_features, float *y, uint8_t *qscratch,
                           int32_t shard_groups);

/* shard_groups (both entries): row groups per weight shard (kiln-size-weight-shards); a
 * kernel that prefetches (HVX: l2fetch) fetches the next shard as it starts each one. 0: no
 * shards. Results do not depend on it. */

/* kiln_uk_linear_packed with kiln_uk_linear_fused's store step (output segments, residual,
 * SwiGLU; rows = w0 + w1 + w2, or 2 * w0 with swiglu): a kiln.fused_linear whose stacked
 * weight the layout pass repacked. */
void kiln_uk_linear_packed_fused(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x,
                                 int32_t n, int32_t in, const uint8_t *w, int64_t group_stride,
                                 int32_t rows, float *y0, int32_t w0, float *y1, int32_t w1,
                                 float *y2, int32_t w2, const float *residual, int32_t swiglu,
                                 uint8_t *qscratch, int32_t shard_groups);

/* In place: rotates the first rotary_dims elements of every head_dim-wide head of token t
 * by the angles of position positions[t]. cos_table/sin_table are [max_ctx, rotary_dims/2]
 * (angle of pair i at position p = p * theta^(-2i/rotary_dims), precomputed by the
 * compiler). Pairs are (2i, 2i+1), or (i, i + rotary_dims/2) when rotate_half. */
void kiln_uk_rope(float *x, int32_t n, int32_t width, int32_t head_dim, int32_t rotary_dims,
                  int32_t rotate_half, const int32_t *positions, const float *cos_table,
                  const float *sin_table);

/* KV cache element types of kiln_uk_attention (ggml type ids, kiln/quant.h). */
#define KILN_UK_KV_F32 0u
#define KILN_UK_KV_F16 1u
#define KILN_UK_KV_I8 24u
/* Largest head_dim kiln_uk_attention takes (on-stack head buffers); the lowering checks. */
#define KILN_UK_ATTENTION_MAX_HEAD_DIM 512

/* Writes k/v rows of each token into one layer's cache at positions[t], then for each
 * token t and query head h
 *   out[t, h] = softmax_j(scale * q[t, h] . K[j, g(h)]) V[j, g(h)] over j = 0..positions[t],
 * g(h) = kv_head_map[h], or h / (heads / kv_heads) when kv_head_map is NULL.
 * Cache: k_cache holds max_ctx rows of kv_heads*head_dim elements of k_format (f32, f16, or
 * i8 with k_scales[pos * kv_heads + g] = max|k| / 127 of that head, q = rint(k / scale));
 * v_cache the same rows in v_format (f32 or f16); k_scales is NULL unless k_format is i8.
 * rotary_dims > 0 rotates q and k first as kiln_uk_rope would (k before it is stored),
 * with the same tables; 0 means q and k arrive rotated (tables may be NULL).
 * scores is scratch of heads * max_ctx floats; head_dim <= KILN_UK_ATTENTION_MAX_HEAD_DIM. */
void kiln_uk_attention(const kiln_exec_ctx_t *ctx, const float *q, const float *k,
                       const float *v, int32_t n, const int32_t *positions, int32_t heads,
                       int32_t kv_heads, int32_t head_dim, float scale,
                       const int32_t *kv_head_map, uint32_t k_format, uint32_t v_format,
                       uint8_t *k_cache, float *k_scales, uint8_t *v_cache, int32_t max_ctx,
                       int32_t rotary_dims, int32_t rotate_half, const float *cos_table,
                       const float *sin_table, float *scores, float *out);

/* Elementwise over count floats; out may alias an input. */
void kiln_uk_silu(const float *x, int64_t count, float *out);
void kiln_uk_mul(const float *a, const float *b, int64_t count, float *out);
void kiln_uk_add(const float *a, const float *b, int64_t count, float *out);

/* In place: y[t, i] += bias[i] for every row t of the [n, width] activations (the bias of
 * a kiln.linear, added after kiln_uk_linear). */
void kiln_uk_add_bias(float *y, const float *bias, int32_t n, int32_t width);

/* Every function above, once. The prototypes are the ABI's one definition: the compiler
 * declares each kernel it calls from its prototype's C types (codegen/cpu/UkernelDecls.h),
 * and every compile checks those declarations against the bitcode's definitions, argument
 * by argument (EmitHostCode). A new kernel: its prototype above and its name here. The
 * order is the order of the generated code's declarations. */
#define KILN_UK_FUNCTIONS(X)                                                                \
  X(kiln_uk_check_inputs)                                                                   \
  X(kiln_uk_embed)                                                                          \
  X(kiln_uk_rms_norm)                                                                       \
  X(kiln_uk_linear)                                                                         \
  X(kiln_uk_linear_fused)                                                                   \
  X(kiln_uk_linear_packed_fused)                                                            \
  X(kiln_uk_linear_packed)                                                                  \
  X(kiln_uk_rope)                                                                           \
  X(kiln_uk_attention)                                                                      \
  X(kiln_uk_silu)                                                                           \
  X(kiln_uk_mul)                                                                            \
  X(kiln_uk_add)                                                                            \
  X(kiln_uk_add_bias)

#ifdef __cplusplus
}
#endif

#endif /* KILN_CODEGEN_COMMON_UKERNEL_ABI_H_ */
