/* kiln micro-kernels, x86 (AVX2 + FMA + F16C; AVX-512F/BW when __AVX512F__): linear
 * (y = x W^T) for f32, f16, q8_0, q4_0, q4_1, q3_0 and q4_K/q5_K/q6_K weights. Overrides
 * generic/linear.c.
 *
 * Register tiles of ROWS output rows x TOKENS tokens: 8 x 1 for decode (eight independent
 * FMA chains hide the FMA latency while one x vector is reused by eight rows; with AVX-512,
 * f16 rows of up to 2048 elements instead run 1 x 1, row after row, one memory stream:
 * linear_rows) and
 * 4 x 2 for prefill (2 x 6 for the K-quants, whose decode costs more: tile_kquant).
 * Everything is computed in fp32 (activations are never quantised), 32
 * weights (one block) at a time, so every format matches the reference on the dequantised
 * weights to float rounding. Weights are decoded into fp32 vectors holding exactly the
 * values kiln_dequantize gives, except for the AVX2 q4 path:
 * - q8_0: int8 -> int32 -> float times the block scale (exact);
 * - q4_0/q4_1, AVX-512: the block's 16 possible values are computed once per (row, block)
 *   into one register - (c - 8) * d for q4_0 (exact), fma(c, d, m) for q4_1 (one rounding,
 *   as the reference decoder) for codes c = 0..15 - and each 16-weight chunk is a single
 *   vpermps of that table by the codes (bytes zero-extended to dword lanes; vpermps reads
 *   the low 4 bits, so the low nibbles need no mask and the high ones one shift);
 * - q4_0/q4_1, AVX2 (vpermps has 8 entries): codes -> int32 -> float, multiplied with x,
 *   and the block scale (and q4_1 min) applied once per block (see tile_group_q4);
 * - q3_0 (both ISAs): the codes' low and high bits shifted into int32 lanes with vpsrlvd,
 *   (c - 4) as float (exact), multiplied with x and the block scale applied once per block
 *   (tile_group_q3);
 * - q4_K/q5_K/q6_K: each 32-element group's bit fields unpacked in int32 lanes and scaled
 *   into exactly the decoder's floats (kquant_chunk), then multiplied as f32 weights.
 * Quantising x to int8 for maddubs/vpdpbusd would cut the arithmetic per weight but adds
 * relative errors of 4e-4 on average and up to 4e-3 per dot product (measured on the
 * differential tests' data: 4 to 40 times their bound, where fp32 stays below 3e-7), needs
 * scratch space the ABI does not give linear, and with ggml's block layout (an fp16 scale
 * per 32 weights, 18- or 20-byte blocks) the per-block scale handling costs about what it
 * saves. The q4 kernels here are bound by decode work (about 9 vector instructions per
 * block and row with AVX-512, 18 with AVX2), not by DRAM; a repacked layout (the scales of
 * several rows together) is the way past that: the r16 formats and kiln_uk_linear_packed
 * (linear_packed.c), which the layout pass selects (docs/perf.md, "Plain-row x86 kernels:
 * fp32 math, prefetch for block formats", "Integer-dot kernels on r16 groups").
 *
 * A row's tail (in not a multiple of 32) is read with masked loads, so x is never read
 * past `in`; the padding of a block format's last block is read whole and its (finite)
 * weights multiply masked-off zeros.
 * Each (row, token) accumulator sees the same operations in any tile, so results do not
 * depend on the task split. Rows are split into tasks as in the generic kernel.
 */
#include <immintrin.h>

#include "common.h"
#include "ukernel_abi.h"

#define GROUP 32

#if defined(__AVX512F__)
#define VW 16
typedef __m512 vf_t;
#define V_ZERO() _mm512_setzero_ps()
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_SET1(s) _mm512_set1_ps(s)
KILN_UK_INLINE vf_t v_load(const float *p, int32_t count) {
  if (count >= VW)
    return _mm512_loadu_ps(p);
  return _mm512_maskz_loadu_ps((__mmask16)((1u << count) - 1), p);
}
KILN_UK_INLINE vf_t v_load_f16(const uint16_t *p, int32_t count) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  if (count < VW)
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)((1u << count) - 1), p));
#else
  if (count < VW) {
    uint16_t tmp[VW] = {0};
    for (int32_t j = 0; j < count; ++j)
      tmp[j] = ((const kiln_uk_uu16_t *)p)[j];
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)tmp));
  }
#endif
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
KILN_UK_INLINE vf_t v_load_q8(const int8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
/* the fp16 at p (any alignment) in every lane: a word broadcast from memory and one
 * conversion */
KILN_UK_INLINE vf_t v_half_bcast(const uint8_t *p) {
  return _mm512_cvtph_ps(_mm256_set1_epi16((short)*(const kiln_uk_uu16_t *)p));
}
KILN_UK_INLINE float v_reduce(vf_t v) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), hi);
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#else /* AVX2 */
#define VW 8
typedef __m256 vf_t;
#define V_ZERO() _mm256_setzero_ps()
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_SET1(s) _mm256_set1_ps(s)
/* lanes < count are all-ones: a window into 8 x -1 followed by 8 x 0 */
static const int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
KILN_UK_INLINE vf_t v_load(const float *p, int32_t count) {
  if (count >= VW)
    return _mm256_loadu_ps(p);
  return _mm256_maskload_ps(p, _mm256_loadu_si256((const __m256i *)(kMaskWindow + 8 - count)));
}
KILN_UK_INLINE vf_t v_load_f16(const uint16_t *p, int32_t count) {
  if (count < VW) {
    uint16_t tmp[VW] = {0};
    for (int32_t j = 0; j < count; ++j)
      tmp[j] = ((const kiln_uk_uu16_t *)p)[j];
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tmp));
  }
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
KILN_UK_INLINE vf_t v_load_q8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
KILN_UK_INLINE vf_t v_half_bcast(const uint8_t *p) {
  return _mm256_cvtph_ps(_mm_set1_epi16((short)*(const kiln_uk_uu16_t *)p));
}
KILN_UK_INLINE float v_reduce(vf_t v) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#endif

#define CHUNKS (GROUP / VW)
#define MAX_ROWS 8
#define MAX_TOKENS 2

/* Chunk c (VW elements, `count` of them valid) of the group at element i0 of a row.
 * For q8_0, scale is the block's scale as a vector. */
KILN_UK_INLINE vf_t load_w(uint32_t format, const uint8_t *row, int32_t i0, int32_t c,
                           int32_t count, vf_t scale) {
  if (format == KILN_GGML_TYPE_F32)
    return v_load((const float *)row + i0 + c * VW, count);
  if (format == KILN_GGML_TYPE_F16)
    return v_load_f16((const uint16_t *)row + i0 + c * VW, count);
  const uint8_t *b = row + (int64_t)(i0 / QK8_0) * (int64_t)sizeof(kiln_block_q8_0_t);
  return V_MUL(v_load_q8((const int8_t *)(b + 2) + c * VW), scale);
}

KILN_UK_INLINE vf_t block_scale(uint32_t format, const uint8_t *row, int32_t i0) {
  if (format != KILN_GGML_TYPE_Q8_0)
    return V_ZERO();
  const uint8_t *b = row + (int64_t)(i0 / QK8_0) * (int64_t)sizeof(kiln_block_q8_0_t);
  return V_SET1(_cvtsh_ss(kiln_uk_load_u16(b)));
}

KILN_UK_INLINE int32_t is_q4(uint32_t format) {
  return format == KILN_GGML_TYPE_Q4_0 || format == KILN_GGML_TYPE_Q4_1;
}

/* sum_j code_j * x_j over a group's `valid` elements, its codes as CHUNKS float vectors (the
 * block's scale is applied by the caller, once). */
KILN_UK_INLINE vf_t codes_dot(const vf_t *code, const float *x, int32_t valid) {
  vf_t blk = V_MUL(code[0], v_load(x, valid));
  for (int32_t c = 1; c < CHUNKS; ++c) {
    const int32_t count = valid - c * VW;
    if (count <= 0)
      break;
    blk = V_FMA(code[c], v_load(x + c * VW, count), blk);
  }
  return blk;
}

#if defined(__AVX512F__)
/* q4 group, AVX-512: per (row, block) the table of the 16 values a code can decode to -
 * (c - 8) * d for q4_0 (exact), fma(c, d, m) for q4_1 (rounded once, as the reference
 * decoder) - and each 16-weight chunk is one vpermps of that table by the code bytes
 * zero-extended to dwords (vpermps reads the low 4 bits: the low nibbles need no mask,
 * the high ones one shift). The weights are exactly the dequantised ones. */
KILN_UK_INLINE void tile_group_q4(uint32_t format, int32_t ROWS, int32_t TOKENS,
                                  const uint8_t *const *rows, const float *const *xs, int32_t i0,
                                  int32_t valid, vf_t acc[MAX_ROWS][MAX_TOKENS]) {
  const int64_t bb = kiln_uk_block_bytes(format);
  for (int32_t r = 0; r < ROWS; ++r) {
    const uint8_t *b = rows[r] + (int64_t)(i0 / GROUP) * bb;
    const vf_t d = v_half_bcast(b);
    const vf_t table =
        format == KILN_GGML_TYPE_Q4_0
            ? _mm512_mul_ps(_mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7),
                            d)
            : _mm512_fmadd_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              d, v_half_bcast(b + 2));
    const __m512i codes = _mm512_cvtepu8_epi32(
        _mm_loadu_si128((const __m128i *)(b + (format == KILN_GGML_TYPE_Q4_0 ? 2 : 4))));
    const vf_t w[CHUNKS] = {_mm512_permutexvar_ps(codes, table),
                            _mm512_permutexvar_ps(_mm512_srli_epi32(codes, 4), table)};
    for (int32_t c = 0; c < CHUNKS; ++c) {
      const int32_t count = valid - c * VW;
      if (count <= 0)
        break;
      for (int32_t t = 0; t < TOKENS; ++t)
        acc[r][t] = V_FMA(w[c], v_load(xs[t] + i0 + c * VW, count), acc[r][t]);
    }
  }
}
#else
/* q4 group, AVX2 (vpermps has 8 entries, and decoding each weight with its own FMA
 * saturates the FP ports): the scale is factored out of the block,
 *   q4_0: sum_j (c_j - 8) d x_j = d * (sum_j c_j x_j - 8 sum_j x_j)
 *   q4_1: sum_j (c_j d + m) x_j = d * sum_j c_j x_j + m * sum_j x_j,
 * with the codes c_j converted to float once per (row, block) and the lane sums of x once
 * per tile. Rounding differs from the dequantised weights' dot product only at the level
 * of float accumulation. x is re-read per row (FMA memory operands, from L1), which
 * leaves registers for the eight accumulators of the decode tile. */
KILN_UK_INLINE void tile_group_q4(uint32_t format, int32_t ROWS, int32_t TOKENS,
                                  const uint8_t *const *rows, const float *const *xs, int32_t i0,
                                  int32_t valid, vf_t acc[MAX_ROWS][MAX_TOKENS]) {
  const int64_t bb = kiln_uk_block_bytes(format);
  vf_t xsum[MAX_TOKENS];
  for (int32_t t = 0; t < TOKENS; ++t) {
    vf_t xc[CHUNKS];
    for (int32_t c = 0; c < CHUNKS; ++c)
      xc[c] = valid - c * VW > 0 ? v_load(xs[t] + i0 + c * VW, valid - c * VW) : V_ZERO();
    xsum[t] = _mm256_add_ps(_mm256_add_ps(xc[0], xc[1]), _mm256_add_ps(xc[2], xc[3]));
    if (format == KILN_GGML_TYPE_Q4_0)
      xsum[t] = V_MUL(xsum[t], V_SET1(-8.0f));
  }
  for (int32_t r = 0; r < ROWS; ++r) {
    const uint8_t *b = rows[r] + (int64_t)(i0 / GROUP) * bb;
    const uint8_t *qs = b + (format == KILN_GGML_TYPE_Q4_0 ? 2 : 4);
    const __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)qs));
    const __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qs + 8)));
    const __m256i low = _mm256_set1_epi32(15);
    /* chunk c holds elements 8c..8c+7: low nibbles of bytes 0-7, 8-15, then high ones */
    const vf_t code[CHUNKS] = {_mm256_cvtepi32_ps(_mm256_and_si256(v0, low)),
                               _mm256_cvtepi32_ps(_mm256_and_si256(v1, low)),
                               _mm256_cvtepi32_ps(_mm256_srli_epi32(v0, 4)),
                               _mm256_cvtepi32_ps(_mm256_srli_epi32(v1, 4))};
    const vf_t d = v_half_bcast(b);
    for (int32_t t = 0; t < TOKENS; ++t) {
      const vf_t blk = codes_dot(code, xs[t] + i0, valid);
      if (format == KILN_GGML_TYPE_Q4_0) {
        acc[r][t] = V_FMA(_mm256_add_ps(blk, xsum[t]), d, acc[r][t]);
      } else {
        acc[r][t] = V_FMA(blk, d, acc[r][t]);
        acc[r][t] = V_FMA(xsum[t], v_half_bcast(b + 2), acc[r][t]);
      }
    }
  }
}
#endif

/* Chunk c of a q3_0 block (kiln/quant_blocks.h) as the floats q - 4 (exact). Element e's
 * low bits are bits 2*(e/8) of qs[e%8], its high bit bit e of qh. */
KILN_UK_INLINE vf_t q3_chunk(const uint8_t *b, int32_t c) {
  const __m128i qs8 = _mm_loadl_epi64((const __m128i *)(b + 2));
  const int32_t qh = (int32_t) * (const kiln_uk_uu32_t *)(b + 10);
#if defined(__AVX512F__)
  /* lanes 0-7 and 8-15 are elements 16c + i: bytes 0..7 twice, shifted by 4c and 4c + 2 */
  const __m512i q = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(qs8, qs8));
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i lshift = _mm512_add_epi32(_mm512_set1_epi32(4 * c),
                                          _mm512_slli_epi32(_mm512_srli_epi32(lane, 3), 1));
  const __m512i low = _mm512_and_si512(_mm512_srlv_epi32(q, lshift), _mm512_set1_epi32(3));
  const __m512i high = _mm512_and_si512(
      _mm512_srlv_epi32(_mm512_set1_epi32(qh), _mm512_add_epi32(lane, _mm512_set1_epi32(16 * c))),
      _mm512_set1_epi32(1));
  const __m512i code = _mm512_or_si512(low, _mm512_slli_epi32(high, 2));
  return _mm512_sub_ps(_mm512_cvtepi32_ps(code), V_SET1(4.0f));
#else
  /* lanes are elements 8c + i: bytes 0..7 shifted by 2c */
  const __m256i q = _mm256_cvtepu8_epi32(qs8);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i low =
      _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_set1_epi32(2 * c)), _mm256_set1_epi32(3));
  const __m256i high = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(qh), _mm256_add_epi32(lane, _mm256_set1_epi32(8 * c))),
      _mm256_set1_epi32(1));
  const __m256i code = _mm256_or_si256(low, _mm256_slli_epi32(high, 2));
  return _mm256_sub_ps(_mm256_cvtepi32_ps(code), V_SET1(4.0f));
#endif
}

/* q3_0 group: sum_j (q_j - 4) d x_j = d * sum_j (q_j - 4) x_j, the codes decoded once per
 * (row, block) and the scale applied once per block, as the AVX2 q4 path. */
KILN_UK_INLINE void tile_group_q3(int32_t ROWS, int32_t TOKENS, const uint8_t *const *rows,
                                  const float *const *xs, int32_t i0, int32_t valid,
                                  vf_t acc[MAX_ROWS][MAX_TOKENS]) {
  for (int32_t r = 0; r < ROWS; ++r) {
    const uint8_t *b = rows[r] + (int64_t)(i0 / GROUP) * (int64_t)sizeof(kiln_block_q3_0_t);
    vf_t code[CHUNKS];
    for (int32_t c = 0; c < CHUNKS; ++c)
      code[c] = q3_chunk(b, c);
    const vf_t d = v_half_bcast(b);
    for (int32_t t = 0; t < TOKENS; ++t) {
      const vf_t blk = codes_dot(code, xs[t] + i0, valid);
      acc[r][t] = V_FMA(blk, d, acc[r][t]);
    }
  }
}

/* Integer lanes for the K-quant codes: VW bytes zero-extended to int32, and the few
 * operations their bit fields need. */
#if defined(__AVX512F__)
typedef __m512i vi_t;
KILN_UK_INLINE vi_t vi_u8(const uint8_t *p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}
#define VI_AND(a, m) _mm512_and_si512(a, _mm512_set1_epi32(m))
#define VI_SRL(a, n) _mm512_srl_epi32(a, _mm_cvtsi32_si128(n))
#define VI_SLL4_OR(a, b) _mm512_or_si512(a, _mm512_slli_epi32(b, 4))
#define VI_TO_F(a, off) _mm512_cvtepi32_ps(_mm512_sub_epi32(a, _mm512_set1_epi32(off)))
#else
typedef __m256i vi_t;
KILN_UK_INLINE vi_t vi_u8(const uint8_t *p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}
#define VI_AND(a, m) _mm256_and_si256(a, _mm256_set1_epi32(m))
#define VI_SRL(a, n) _mm256_srl_epi32(a, _mm_cvtsi32_si128(n))
#define VI_SLL4_OR(a, b) _mm256_or_si256(a, _mm256_slli_epi32(b, 4))
#define VI_TO_F(a, off) _mm256_cvtepi32_ps(_mm256_sub_epi32(a, _mm256_set1_epi32(off)))
#endif

/* Group j's scale and offset in super-block b: q4_K/q5_K d*sc and dmin*m (as the decoder
 * forms them), q6_K d (kquant_chunk applies each half's int8 scale) and 0. */
KILN_UK_INLINE void kquant_group_scale(uint32_t format, const uint8_t *b, int32_t j, float *d1,
                                       float *m1) {
  if (format == KILN_GGML_TYPE_Q6_K) {
    *d1 = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b + 208));
    *m1 = 0.0f;
    return;
  }
  int32_t sc, m;
  kiln_uk_kquant_scale_min(b + 4, j, &sc, &m);
  *d1 = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b)) * (float)sc;
  *m1 = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b + 2)) * (float)m;
}

/* The weights of chunk c of a K-quant group (j: the group within its super-block b), exactly
 * the values kiln_uk_decode_kquant gives (its layout notes apply): q4_K/q5_K fma(q, d*sc,
 * -dmin*m), where q * (d*sc) is exact so the one rounding is the decoder's subtraction;
 * q6_K (q - 32) * (d*sc), the int8 scale of the chunk's 16-element half. */
KILN_UK_INLINE vf_t kquant_chunk(uint32_t format, const uint8_t *b, int32_t j, int32_t c,
                                 float d1, float m1) {
  const int32_t l0 = c * VW;
  if (format == KILN_GGML_TYPE_Q6_K) {
    const int32_t h = j / 4, k = j % 4;
    const vi_t ql = vi_u8(b + 64 * h + 32 * (k & 1) + l0), qh = vi_u8(b + 128 + 32 * h + l0);
    const vi_t lo = k < 2 ? VI_AND(ql, 15) : VI_SRL(ql, 4);
    const vi_t q = VI_SLL4_OR(lo, VI_AND(VI_SRL(qh, 2 * k), 3));
    const float ds = d1 * (float)((const int8_t *)(b + 192))[8 * h + 2 * k + l0 / 16];
    return V_MUL(VI_TO_F(q, 32), V_SET1(ds));
  }
  const int32_t q5 = format == KILN_GGML_TYPE_Q5_K;
  const vi_t qs = vi_u8(b + 16 + (q5 ? 32 : 0) + 32 * (j / 2) + l0);
  vi_t q = (j & 1) ? VI_SRL(qs, 4) : VI_AND(qs, 15);
  if (q5)
    q = VI_SLL4_OR(q, VI_AND(VI_SRL(vi_u8(b + 16 + l0), j), 1));
  return V_FMA(VI_TO_F(q, 0), V_SET1(d1), V_SET1(-m1));
}

/* q4_K/q5_K/q6_K group: each row's 32 weights decoded in vectors (kquant_chunk), then
 * multiplied as f32 weights. */
KILN_UK_INLINE void tile_group_kquant(uint32_t format, int32_t ROWS, int32_t TOKENS,
                                      const uint8_t *const *rows, const float *const *xs,
                                      int32_t i0, int32_t valid,
                                      vf_t acc[MAX_ROWS][MAX_TOKENS]) {
  const int32_t j = (i0 % QK_K) / GROUP;
  const int64_t bb = kiln_uk_kquant_block_bytes(format);
  for (int32_t r = 0; r < ROWS; ++r) {
    const uint8_t *b = rows[r] + (int64_t)(i0 / QK_K) * bb;
    float d1, m1;
    kquant_group_scale(format, b, j, &d1, &m1);
    for (int32_t c = 0; c < CHUNKS; ++c) {
      const int32_t count = valid - c * VW;
      if (count <= 0)
        break;
      const vf_t wv = kquant_chunk(format, b, j, c, d1, m1);
      for (int32_t t = 0; t < TOKENS; ++t)
        acc[r][t] = V_FMA(wv, v_load(xs[t] + i0 + c * VW, count), acc[r][t]);
    }
  }
}

/* One group of 32 elements (`valid` of them in x) for a ROWS x TOKENS tile. */
KILN_UK_INLINE void tile_group(uint32_t format, int32_t ROWS, int32_t TOKENS,
                               const uint8_t *const *rows, const float *const *xs, int32_t i0,
                               int32_t valid, vf_t acc[MAX_ROWS][MAX_TOKENS]) {
  if (is_q4(format)) {
    tile_group_q4(format, ROWS, TOKENS, rows, xs, i0, valid, acc);
    return;
  }
  if (format == KILN_TYPE_Q3_0) {
    tile_group_q3(ROWS, TOKENS, rows, xs, i0, valid, acc);
    return;
  }
  if (kiln_uk_is_kquant(format)) {
    tile_group_kquant(format, ROWS, TOKENS, rows, xs, i0, valid, acc);
    return;
  }
  vf_t scale[MAX_ROWS];
  for (int32_t r = 0; r < ROWS; ++r)
    scale[r] = block_scale(format, rows[r], i0);
  for (int32_t c = 0; c < CHUNKS; ++c) {
    const int32_t count = valid - c * VW;
    if (count <= 0)
      break;
    vf_t xv[MAX_TOKENS];
    for (int32_t t = 0; t < TOKENS; ++t)
      xv[t] = v_load(xs[t] + i0 + c * VW, count);
    for (int32_t r = 0; r < ROWS; ++r) {
      /* q8_0 weights past `in` are zero padding inside the block: load them whole */
      const vf_t wv = load_w(format, rows[r], i0, c, format == KILN_GGML_TYPE_Q8_0 ? VW : count,
                             scale[r]);
      for (int32_t t = 0; t < TOKENS; ++t)
        acc[r][t] = V_FMA(wv, xv[t], acc[r][t]);
    }
  }
}

/* y[t0.., r0..] for a ROWS x TOKENS tile (compile-time constants after inlining). */
KILN_UK_INLINE void tile(const linear_args_t *a, uint32_t format, int32_t mode, int32_t ROWS,
                         int32_t TOKENS,
                         int64_t r0, int32_t t0) {
  const uint8_t *rows[MAX_ROWS];
  const float *xs[MAX_TOKENS];
  vf_t acc[MAX_ROWS][MAX_TOKENS];
  for (int32_t r = 0; r < ROWS; ++r) {
    rows[r] = a->w + (r0 + r) * a->row_stride;
    for (int32_t t = 0; t < TOKENS; ++t)
      acc[r][t] = V_ZERO();
  }
  for (int32_t t = 0; t < TOKENS; ++t)
    xs[t] = a->x + (int64_t)(t0 + t) * a->in;
  /* Decode of a block format reads 8 interleaved row streams, short ones (a 4096-wide q4_0
   * row is 36 cache lines), which the hardware prefetchers pick up too late: fetch the same
   * block of the rows two tiles ahead, every block for q8_0 and every other one for the
   * q4 formats (< 64 bytes apart either way, so no line is skipped). Prefetches never
   * fault, so reaching past the last row is harmless (the address is formed as an
   * integer). f16 (a line per row and block) lost with them (docs/perf.md, "Plain-row x86
   * kernels: fp32 math, prefetch for block formats"). */
  const int32_t prefetch =
      TOKENS == 1 && ROWS == MAX_ROWS &&
      (format == KILN_GGML_TYPE_Q8_0 || is_q4(format) || format == KILN_TYPE_Q3_0);
  const int64_t bb = kiln_uk_block_bytes(format);
  const int32_t every = bb < 32 ? 2 : 1;
  const int64_t ahead = 2 * (int64_t)ROWS * a->row_stride;
  int32_t i0 = 0;
  for (; i0 + GROUP <= a->in; i0 += GROUP) {
    if (prefetch && (i0 / GROUP) % every == 0)
      for (int32_t r = 0; r < ROWS; ++r)
        _mm_prefetch((const char *)((uintptr_t)rows[r] + (uintptr_t)(ahead + (i0 / GROUP) * bb)),
                     _MM_HINT_T0);
    tile_group(format, ROWS, TOKENS, rows, xs, i0, GROUP, acc);
  }
  if (i0 < a->in)
    tile_group(format, ROWS, TOKENS, rows, xs, i0, a->in - i0, acc);
  for (int32_t r = 0; r < ROWS; ++r)
    for (int32_t t = 0; t < TOKENS; ++t)
      kiln_uk_linear_store(&a->ep, mode, t0 + t, r0 + r, v_reduce(acc[r][t]));
}

/* K-quant prefill tile: KQ_ROWS rows x KQ_TOKENS tokens, so each decoded chunk (about ten
 * integer and conversion instructions, kquant_chunk) serves six FMAs instead of the 4 x 2
 * tile's two; the same operations per (row, token) as tile(), so the bits do not depend on
 * the tiling. 12 accumulators leave AVX2's 16 registers room for a weight and an x vector. */
#define KQ_ROWS 2
#define KQ_TOKENS 6
KILN_UK_INLINE void tile_kquant(const linear_args_t *a, uint32_t format, int32_t mode,
                                int64_t r0, int32_t t0) {
  const uint8_t *rows[KQ_ROWS];
  const float *xs[KQ_TOKENS];
  vf_t acc[KQ_ROWS][KQ_TOKENS];
  KILN_UK_UNROLL
  for (int32_t r = 0; r < KQ_ROWS; ++r) {
    rows[r] = a->w + (r0 + r) * a->row_stride;
    KILN_UK_UNROLL
    for (int32_t t = 0; t < KQ_TOKENS; ++t)
      acc[r][t] = V_ZERO();
  }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < KQ_TOKENS; ++t)
    xs[t] = a->x + (int64_t)(t0 + t) * a->in;
  const int64_t bb = kiln_uk_kquant_block_bytes(format);
  for (int32_t i0 = 0; i0 < a->in; i0 += GROUP) {
    const int32_t valid = KILN_UK_MIN(GROUP, a->in - i0), j = (i0 % QK_K) / GROUP;
    KILN_UK_UNROLL
    for (int32_t r = 0; r < KQ_ROWS; ++r) {
      const uint8_t *b = rows[r] + (int64_t)(i0 / QK_K) * bb;
      float d1, m1;
      kquant_group_scale(format, b, j, &d1, &m1);
      KILN_UK_UNROLL
      for (int32_t c = 0; c < CHUNKS; ++c) {
        const int32_t count = valid - c * VW;
        if (count <= 0)
          break;
        const vf_t wv = kquant_chunk(format, b, j, c, d1, m1);
        KILN_UK_UNROLL
        for (int32_t t = 0; t < KQ_TOKENS; ++t)
          acc[r][t] = V_FMA(wv, v_load(xs[t] + i0 + c * VW, count), acc[r][t]);
      }
    }
  }
  KILN_UK_UNROLL
  for (int32_t r = 0; r < KQ_ROWS; ++r)
    KILN_UK_UNROLL
    for (int32_t t = 0; t < KQ_TOKENS; ++t)
      kiln_uk_linear_store(&a->ep, mode, t0 + t, r0 + r, v_reduce(acc[r][t]));
}

/* f16 decode reads rows up to this many elements one after another (1-row tiles, one
 * stream, the same bits) with AVX-512: see linear_rows. 0 with AVX2, whose one-row chain
 * has half the lanes, and with AMX, whose Xeons (Sapphire Rapids on) read 8 row streams
 * faster than one (docs/perf.md, "f16 decode: row order per target"). */
#if defined(__AVX512F__) && !defined(__AMX_TILE__)
#define F16_ROW_BY_ROW_MAX_IN 2048
#else
#define F16_ROW_BY_ROW_MAX_IN 0
#endif

KILN_UK_INLINE void linear_rows(const linear_args_t *a, uint32_t format, int32_t mode,
                                int64_t r0, int64_t r1) {
  if (a->n == 1) {
    int64_t r = r0;
    /* An 8-row tile reads 8 row streams. With f16's short rows (up to 4 KiB), rows one
     * after another (the rows are contiguous: one stream) went faster; longer rows do not,
     * as one row's single FMA chain waits on latency unless the next row overlaps it
     * (docs/perf.md, "f16 decode: row order per target"). Each row's operations are the
     * tile's, so the bits are the same. */
    if (format == KILN_GGML_TYPE_F16 && a->in <= F16_ROW_BY_ROW_MAX_IN) {
      for (; r < r1; ++r)
        tile(a, format, mode, 1, 1, r, 0);
      return;
    }
    for (; r + 8 <= r1; r += 8)
      tile(a, format, mode, 8, 1, r, 0);
    for (; r < r1; ++r)
      tile(a, format, mode, 1, 1, r, 0);
    return;
  }
  int64_t r = r0;
  if (kiln_uk_is_kquant(format) && a->n >= KQ_TOKENS) {
    for (; r + KQ_ROWS <= r1; r += KQ_ROWS) {
      int32_t t = 0;
      for (; t + KQ_TOKENS <= a->n; t += KQ_TOKENS)
        tile_kquant(a, format, mode, r, t);
      for (; t + 2 <= a->n; t += 2)
        tile(a, format, mode, KQ_ROWS, 2, r, t);
      if (t < a->n)
        tile(a, format, mode, KQ_ROWS, 1, r, t);
    }
  }
  for (; r + 4 <= r1; r += 4) {
    int32_t t = 0;
    for (; t + 2 <= a->n; t += 2)
      tile(a, format, mode, 4, 2, r, t);
    if (t < a->n)
      tile(a, format, mode, 4, 1, r, t);
  }
  for (; r < r1; ++r) {
    int32_t t = 0;
    for (; t + 2 <= a->n; t += 2)
      tile(a, format, mode, 1, 2, r, t);
    if (t < a->n)
      tile(a, format, mode, 1, 1, r, t);
  }
}

#include "linear_entry.h"
