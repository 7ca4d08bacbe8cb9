/* kiln micro-kernels, x86: linear over the r16 repacked formats (q4_0_r16, q4_1_r16,
 * q8_0_r16; kiln/quant_packed.h; q4_K_r16 and q6_K_r16 in x86/linear_packed_kquant.h).
 * Overrides generic/linear_packed.c; same arithmetic. The r32 formats (Hexagon's) run
 * packed_generic_groups.
 *
 * One 32-bit lane of a 64-byte code chunk is 4 weights of one row, so a u8 x s8 dot
 * product with 4 activation bytes broadcast to every lane accumulates 16 rows (AVX-512:
 * one register; AVX2: two) with no horizontal reduction, and a block's 16 fp16 scales are
 * one load. The dot products (block_dot, one implementation per ISA family):
 * - AVX512-VNNI: vpdpbusd zmm (q8 codes biased to u8, corrected by -128 * sum(x) once per
 *   block in int32);
 * - AVX-VNNI (256-bit, no AVX-512): vpdpbusd ymm, the same math;
 * - otherwise vpmaddubsw + vpmaddwd: q4 sums a block's int16 pairs before widening, q8 is
 *   unbiased and multiplied as |q| * (x * sign(q)), as ggml does.
 * Decode (one token) walks all of a group's rows at once (tile's H); prefill runs register
 * tiles of 16 rows (AVX2: 8, one half; 16 for q4 without VNNI) x TT tokens, the decoded
 * weight chunks reused by every token of the tile and a group's codes (in * 9/16 bytes for
 * q4) re-read from L1/L2 per tile. With AMX (target x86-64-v4-amx) prefill runs tile
 * multiplies of 16 tokens instead (amx_groups, below).
 *
 * Decode with AVX-512 walks DECODE_LANES(format) groups at once (q8: 4, q4: 2; 4 for all
 * with AMX), a block of each in turn, from that many lanes of the matrix
 * (packed_decode_lanes): a core keeps more lines in flight with several forward streams
 * than with one; 4 adjacent groups instead of 4 lanes read slower than one stream
 * (docs/perf.md, "x86 decode walks 2 lanes for q4 and 4 for q8").
 *
 * Software prefetch in decode (DECODE_PREFETCH): 8 KiB ahead without AVX-512, 2 KiB with
 * AMX, none on AVX-512 without AMX. The weights are one forward stream
 * (kiln/quant_packed.h), which the Zen 5's hardware prefetchers follow alone (software
 * prefetch on top of them slowed decode); on the Zen 3 (AVX2) and on Sapphire Rapids,
 * prefetching ahead measured faster (docs/perf.md, "Decode prefetch per x86 target").
 */
#include <immintrin.h>

#include "packed_common.h"
#include "ukernel_abi.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define HALVES 1 /* registers per 16 rows */
#define TT 8     /* tokens per prefill tile */
#if defined(__AMX_TILE__)
#define DECODE_PREFETCH 2048 /* bytes ahead; see the top comment */
#else
#define DECODE_PREFETCH 0 /* none: see the top comment */
#endif
#define DECODE_STREAMS 4  /* the most lanes a decode walks at once; see the top comment */
/* decode's activation broadcasts embedded, per lane (see tile); measured on the Zen 5 only
 * (docs/perf.md, "Folded activation broadcasts in q4 decode") */
#if defined(__AVX512VNNI__) && !DECODE_PREFETCH
#define DECODE_FOLDED 1
#else
#define DECODE_FOLDED 0
#endif
typedef __m512i vi_t;
typedef __m512 vf_t;
#define VI_ZERO() _mm512_setzero_si512()
#define VI_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define VI_SET1(v) _mm512_set1_epi32(v)
#define VI_SUB(a, b) _mm512_sub_epi32(a, b)
#define VI_ADD(a, b) _mm512_add_epi32(a, b)
#define VI_AND(a, b) _mm512_and_si512(a, b)
#define VI_SRL4(a) _mm512_srli_epi16(a, 4)
#define VI_SRA4_32(a) _mm512_srai_epi32(a, 4)
#define VI_SET1_8(v) _mm512_set1_epi8(v)
#define VI_XOR80(a) _mm512_xor_si512(a, _mm512_set1_epi8((char)0x80))
#define VF_FROM_I(a) _mm512_cvtepi32_ps(a)
#define VF_ZERO() _mm512_setzero_ps()
#define VF_SET1(v) _mm512_set1_ps(v)
#define VF_MUL(a, b) _mm512_mul_ps(a, b)
#define VF_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
/* 16 fp16 at p (any alignment) */
#define VF_HALVES(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#if defined(__AVX512VNNI__)
#define Q8_BIAS 128
#define DOT_U8S8(acc, w, x) _mm512_dpbusd_epi32(acc, w, x)
#else
#define Q8_BIAS 0
#define U8S8_PAIRS(w, x) _mm512_maddubs_epi16(w, x)
#define I16_ADD(a, b) _mm512_add_epi16(a, b)
#define I16_WIDEN(a) _mm512_madd_epi16(a, _mm512_set1_epi16(1))
#define ABS8(w) _mm512_abs_epi8(w)
/* x negated where w < 0 (x is never -128: packed_quantize_row's codes are in [-127, 127]) */
#define SIGN8(x, w) _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x)
#endif
KILN_UK_INLINE void vf_store_rows(float *y, vf_t v, int32_t count) {
  if (count >= 16)
    _mm512_storeu_ps(y, v);
  else
    _mm512_mask_storeu_ps(y, (__mmask16)((1u << count) - 1), v);
}
#else /* AVX2 */
#define HALVES 2
#define TT 4
#define DECODE_PREFETCH 8192
#define DECODE_STREAMS 1 /* not measured on AVX2-only CPUs; 4 streams x 2 halves would spill */
#define DECODE_FOLDED 0   /* AVX2 has no embedded broadcast */
typedef __m256i vi_t;
typedef __m256 vf_t;
#define VI_ZERO() _mm256_setzero_si256()
#define VI_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define VI_SET1(v) _mm256_set1_epi32(v)
#define VI_SUB(a, b) _mm256_sub_epi32(a, b)
#define VI_ADD(a, b) _mm256_add_epi32(a, b)
#define VI_AND(a, b) _mm256_and_si256(a, b)
#define VI_SRL4(a) _mm256_srli_epi16(a, 4)
#define VI_SRA4_32(a) _mm256_srai_epi32(a, 4)
#define VI_SET1_8(v) _mm256_set1_epi8(v)
#define VI_XOR80(a) _mm256_xor_si256(a, _mm256_set1_epi8((char)0x80))
#define VF_FROM_I(a) _mm256_cvtepi32_ps(a)
#define VF_ZERO() _mm256_setzero_ps()
#define VF_SET1(v) _mm256_set1_ps(v)
#define VF_MUL(a, b) _mm256_mul_ps(a, b)
#define VF_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VF_HALVES(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#if defined(__AVXVNNI__)
#define Q8_BIAS 128
#define DOT_U8S8(acc, w, x) _mm256_dpbusd_avx_epi32(acc, w, x)
#else
#define Q8_BIAS 0
#define U8S8_PAIRS(w, x) _mm256_maddubs_epi16(w, x)
#define I16_ADD(a, b) _mm256_add_epi16(a, b)
#define I16_WIDEN(a) _mm256_madd_epi16(a, _mm256_set1_epi16(1))
#define ABS8(w) _mm256_abs_epi8(w)
#define SIGN8(x, w) _mm256_sign_epi8(x, w) /* x * sign(w); x is never -128 */
#endif
static const int32_t kStoreMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
KILN_UK_INLINE void vf_store_rows(float *y, vf_t v, int32_t count) {
  if (count >= 8)
    _mm256_storeu_ps(y, v);
  else if (count > 0)
    _mm256_maskstore_ps(y, _mm256_loadu_si256((const __m256i *)(kStoreMask + 8 - count)), v);
}
#endif

#define GROUP_ROWS 16 /* r16 groups; r32 (HVX's layout) runs the portable code */
#define LANES (GROUP_ROWS / HALVES) /* rows per register */
#define STASH_GROUPS 8 /* groups per lane held by decode_stashed */
#define STASH_ROWS (STASH_GROUPS * GROUP_ROWS)

typedef int32_t uk_ui32_t __attribute__((aligned(1), may_alias));
/* 4 activation bytes at p in every 32-bit lane */
KILN_UK_INLINE vi_t bcast4(const int8_t *p) { return VI_SET1(*(const uk_ui32_t *)p); }

/* acc += the block's int32 dot products s (rows in lanes) times the rows' scales dw and
 * the token's activation scale d */
KILN_UK_INLINE vf_t add_block(vf_t acc, vi_t s, vf_t dw, float d) {
  return VF_FMA(VF_FROM_I(s), VF_MUL(dw, VF_SET1(d)), acc);
}

/* One block of one register of rows for T tokens: acc[t] += dw * d_t * s_t, where s_t lane
 * r is sum_i w[r][i] * x_t[i] over the block's 32 weights with the codes' offsets removed
 * (q4_0's codes are q + 8, VNNI's q8 codes q + 128: minus 8 or 128 times the activations'
 * code sum; q4_1's minimum is the caller's). Chunk j of a block (64 code bytes; for q4,
 * j < 4 the low nibbles of chunk j and j >= 4 the high ones of chunk j - 4) multiplies
 * x[4j, 4j + 4). Every path's integer sums are exact and the float steps are the same, so
 * every path gives the same bits. */
#if Q8_BIAS
/* VNNI: vpdpbusd, u8 codes x s8 activations into int32, no saturation. Decode (T <= 2)
 * keeps two chains (low and high nibbles) and multiplies the high nibbles in place (16 c):
 * one AND per chunk, one shift of the exact, 16-divisible sum. A prefill tile keeps one
 * chain per token - its T chains interleave, enough to hide vpdpbusd's latency - on high
 * nibbles shifted down once per block for all T tokens: with two chains and the shift per
 * token, 8 tokens' partial sums did not fit the 32 registers and an accumulator was spilled
 * every block. */
KILN_UK_INLINE void block_dot(uint32_t format, const uint8_t *codes, const qact_t *xq,
                              int32_t b, int32_t T, vf_t dw, vf_t *acc) {
  const int32_t one_chain = T > 2;
  const vi_t low4 = VI_SET1_8(15), high4 = VI_SET1_8((char)0xf0);
  vi_t wv[8];
  if (format == KILN_TYPE_Q8_0_R16) {
    for (int32_t k = 0; k < 8; ++k)
      wv[k] = VI_LOAD(codes + k * 64);
  } else {
    for (int32_t k = 0; k < 4; ++k) {
      const vi_t raw = VI_LOAD(codes + k * 64);
      wv[k] = VI_AND(raw, low4);
      wv[4 + k] = one_chain ? VI_AND(VI_SRL4(raw), low4) : VI_AND(raw, high4);
    }
  }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    const int8_t *xb = xq[t].q + b * KILN_PACK_BLOCK;
    const int32_t offset = format == KILN_TYPE_Q8_0_R16   ? Q8_BIAS * xq[t].s[b]
                           : format == KILN_TYPE_Q4_0_R16 ? 8 * xq[t].s[b]
                                                          : 0;
    vi_t s;
    if (one_chain) {
      s = VI_SET1(-offset);
      for (int32_t j = 0; j < 8; ++j)
        s = DOT_U8S8(s, wv[j], bcast4(xb + 4 * j));
    } else if (T == 1 && format != KILN_TYPE_Q8_0_R16) {
      /* q4 decode: the low chain starts at q4_0's correction, loaded (o), not computed
       * from s per block (a load, a shift, a negation and a broadcast from a register) */
      vi_t s0 = format == KILN_TYPE_Q4_0_R16 ? VI_SET1(xq[t].o[b]) : VI_ZERO(), s1 = VI_ZERO();
      for (int32_t k = 0; k < 4; ++k) {
        s0 = DOT_U8S8(s0, wv[k], bcast4(xb + 4 * k));
        s1 = DOT_U8S8(s1, wv[4 + k], bcast4(xb + 16 + 4 * k));
      }
      s = VI_ADD(s0, VI_SRA4_32(s1));
    } else {
      vi_t s0 = VI_ZERO(), s1 = VI_ZERO();
      for (int32_t k = 0; k < 4; ++k) {
        s0 = DOT_U8S8(s0, wv[k], bcast4(xb + 4 * k));
        s1 = DOT_U8S8(s1, wv[4 + k], bcast4(xb + 16 + 4 * k));
      }
      s = VI_SUB(VI_ADD(s0, format == KILN_TYPE_Q8_0_R16 ? s1 : VI_SRA4_32(s1)),
                 VI_SET1(offset));
    }
    acc[t] = add_block(acc[t], s, dw, xq[t].d[b]);
  }
}
#else
/* Without VNNI: vpmaddubsw (u8 x s8 into saturating int16 pairs) + vpmaddwd.
 * - q4: a code (<= 15) times |x| <= 127 is at most 3810 per pair, so a block's 8 chunks of
 *   pairs are summed in int16 (at most 30480: exact) and widened to int32 once: one
 *   vpmaddwd and no int32 add per chunk (docs/perf.md, "AVX2 prefill tiles"). One token
 *   (decode) takes the nibbles straight from each chunk as loaded, one raw chunk live
 *   (holding all 8 decoded chunks for one token was slower); a prefill tile decodes the 8
 *   chunks once for its T tokens (AVX-512 without VNNI; AVX2's q4 prefill runs
 *   block_dot_q4_group instead).
 * - q8: biased codes (<= 255) could saturate the pairs, so the codes are unbiased (q ^ 0x80)
 *   and multiplied as |q| * (x * sign(q)) (at most 2 * 128 * 127 < 32767), as ggml does; a
 *   pair sum is then too large to add to another in int16, so each chunk is widened. The
 *   tokens are the inner loop and the chunks the outer, not unrolled: one chunk, its |q|
 *   and the T sums are live (AVX2, 4 tokens: 14 of the 16 registers with the float
 *   sums). Holding the 8 chunks for every token, as q4 does, plus their 8 |q|, spilled
 *   (llvm-mca-19 -mcpu=znver3: 69 cycles a block with 47 stack accesses, against 8 x 5.7
 *   for the chunk loop; docs/perf.md, "AVX2 prefill tiles"). */
KILN_UK_INLINE void block_dot(uint32_t format, const uint8_t *codes, const qact_t *xq,
                              int32_t b, int32_t T, vf_t dw, vf_t *acc) {
  const int64_t x0 = (int64_t)b * KILN_PACK_BLOCK;
  if (format == KILN_TYPE_Q8_0_R16) {
    vi_t s[TT];
    KILN_UK_UNROLL
    for (int32_t t = 0; t < T; ++t)
      s[t] = VI_ZERO();
    KILN_UK_NO_UNROLL
    for (int32_t j = 0; j < 8; ++j) {
      const vi_t q = VI_XOR80(VI_LOAD(codes + j * 64)), aq = ABS8(q);
      KILN_UK_UNROLL
      for (int32_t t = 0; t < T; ++t)
        s[t] = VI_ADD(s[t], I16_WIDEN(U8S8_PAIRS(aq, SIGN8(bcast4(xq[t].q + x0 + 4 * j), q))));
    }
    KILN_UK_UNROLL
    for (int32_t t = 0; t < T; ++t)
      acc[t] = add_block(acc[t], s[t], dw, xq[t].d[b]);
    return;
  }
  const vi_t low4 = VI_SET1_8(15);
  vi_t wv[8];
  if (T > 1)
    for (int32_t k = 0; k < 4; ++k) {
      const vi_t raw = VI_LOAD(codes + k * 64);
      wv[k] = VI_AND(raw, low4);
      wv[4 + k] = VI_AND(VI_SRL4(raw), low4);
    }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    const int8_t *xb = xq[t].q + x0;
    vi_t p = VI_ZERO(); /* int16 pairs */
    if (T == 1) {
      for (int32_t k = 0; k < 4; ++k) {
        const vi_t raw = VI_LOAD(codes + k * 64);
        p = I16_ADD(p, U8S8_PAIRS(VI_AND(raw, low4), bcast4(xb + 4 * k)));
        p = I16_ADD(p, U8S8_PAIRS(VI_AND(VI_SRL4(raw), low4), bcast4(xb + 16 + 4 * k)));
      }
    } else {
      for (int32_t j = 0; j < 8; ++j)
        p = I16_ADD(p, U8S8_PAIRS(wv[j], bcast4(xb + 4 * j)));
    }
    vi_t s = I16_WIDEN(p);
    if (format == KILN_TYPE_Q4_0_R16)
      s = VI_SUB(s, VI_SET1(8 * xq[t].s[b]));
    acc[t] = add_block(acc[t], s, dw, xq[t].d[b]);
  }
}
#endif

#if HALVES == 2 && !Q8_BIAS
#define Q4_GROUP_TILE 1
/* AVX2 without VNNI, q4 prefill: one block of a whole 16-row group (both registers of rows)
 * for T tokens, so each activation broadcast feeds two vpmaddubsw instead of one. The
 * chunks are the outer loop: a raw 64-byte chunk is split into its two halves' low and high
 * nibbles, used by every token, and dropped. The 2T int16 sums, the 4 nibble registers and
 * two broadcasts fill the 16 registers (the float sums stay on the stack), so clang must not
 * hoist the next chunks' loads: it did, and spilled the decoded nibbles (llvm-mca-19
 * -mcpu=znver3: 83 cycles per block of 16 rows x 4 tokens). An empty asm makes each chunk's
 * loads depend, for the compiler only, on the last chunk's sums: 68.4 cycles, against
 * 2 x 37.4 for two 8-row tiles. Same int16 sums and float steps: the same bits. */
KILN_UK_INLINE void block_dot_q4_group(uint32_t format, const uint8_t *codes,
                                       const qact_t *xq, int32_t b, int32_t T, const vf_t *dw,
                                       vf_t acc[HALVES][TT]) {
  const vi_t low4 = VI_SET1_8(15);
  const int8_t *xb[TT];
  vi_t p[TT][HALVES]; /* int16 pairs */
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    xb[t] = xq[t].q + (int64_t)b * KILN_PACK_BLOCK;
    p[t][0] = p[t][1] = VI_ZERO();
  }
  KILN_UK_UNROLL
  for (int32_t k = 0; k < 4; ++k) {
    if (k > 0) {
      KILN_UK_UNROLL
      for (int32_t t = 0; t < T; ++t)
        __asm__("" : "+r"(codes), "+r"(xb[t]) : "x"(p[t][0]), "x"(p[t][1]));
    }
    const vi_t r0 = VI_LOAD(codes + k * 64), r1 = VI_LOAD(codes + k * 64 + 32);
    const vi_t l0 = VI_AND(r0, low4), h0 = VI_AND(VI_SRL4(r0), low4);
    const vi_t l1 = VI_AND(r1, low4), h1 = VI_AND(VI_SRL4(r1), low4);
    KILN_UK_UNROLL
    for (int32_t t = 0; t < T; ++t) {
      const vi_t xl = bcast4(xb[t] + 4 * k), xh = bcast4(xb[t] + 16 + 4 * k);
      p[t][0] = I16_ADD(p[t][0], I16_ADD(U8S8_PAIRS(l0, xl), U8S8_PAIRS(h0, xh)));
      p[t][1] = I16_ADD(p[t][1], I16_ADD(U8S8_PAIRS(l1, xl), U8S8_PAIRS(h1, xh)));
    }
  }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    const vi_t offset = VI_SET1(format == KILN_TYPE_Q4_0_R16 ? 8 * xq[t].s[b] : 0);
    KILN_UK_UNROLL
    for (int32_t h = 0; h < HALVES; ++h)
      acc[h][t] = add_block(acc[h][t], VI_SUB(I16_WIDEN(p[t][h]), offset), dw[h], xq[t].d[b]);
  }
}
#else
#define Q4_GROUP_TILE 0
#endif

/* The one place a tile's results reach y: half h of the group's rows for one token. */
KILN_UK_INLINE void packed_store(const packed_args_t *a, int64_t g, int32_t h, int32_t t,
                                 vf_t acc) {
  const int64_t r0 = g * GROUP_ROWS + (int64_t)h * LANES;
  const int32_t count = (int32_t)KILN_UK_MIN((int64_t)LANES, a->out_features - r0);
  if (a->mode == KILN_UK_STORE_PLAIN) {
    vf_store_rows(a->y + (int64_t)t * a->out_features + r0, acc, count);
    return;
  }
  float v[LANES];
  vf_store_rows(v, acc, LANES);
  packed_store_fused(a, t, r0, v, count);
}

/* One block of rows [h0*LANES, (h0+H)*LANES) of one group (its codes and scales in the
 * stream) for T tokens into acc[h][t]. */
KILN_UK_INLINE void tile_block(uint32_t format, const uint8_t *block_codes,
                               const uint8_t *block_scales, const qact_t *xq, int32_t b,
                               int32_t h0, int32_t H, int32_t T, vf_t acc[HALVES][TT]) {
#if DECODE_PREFETCH
  /* AVX2 decode on Zen 3: a core's demand misses plus the hardware prefetchers keep too
   * few lines in flight for the DRAM stream, so the lines DECODE_PREFETCH bytes ahead of
   * this block's codes are asked for too, with the line before them (a unit's header,
   * every ub blocks) */
  if (T == 1)
    for (int64_t k = -1; k < (int64_t)kiln_packed_code_bytes(format) / 64; ++k)
      _mm_prefetch((const char *)(block_codes + DECODE_PREFETCH + k * 64), _MM_HINT_T0);
#endif
#if Q4_GROUP_TILE
  if (H == HALVES && T > 1 && format != KILN_TYPE_Q8_0_R16) {
    const vf_t dw[HALVES] = {VF_HALVES(block_scales), VF_HALVES(block_scales + LANES * 2)};
    block_dot_q4_group(format, block_codes, xq, b, T, dw, acc);
    if (format == KILN_TYPE_Q4_1_R16) { /* mins */
      KILN_UK_UNROLL
      for (int32_t hh = 0; hh < HALVES; ++hh) {
        KILN_UK_UNROLL
        for (int32_t t = 0; t < T; ++t)
          acc[hh][t] = VF_FMA(VF_HALVES(block_scales + hh * LANES * 2 + 32),
                              VF_SET1(xq[t].ds[b]), acc[hh][t]);
      }
    }
    return;
  }
#endif
  KILN_UK_UNROLL
  for (int32_t hh = 0; hh < H; ++hh) {
    /* this half's bytes inside a 64-byte chunk, and its scales inside 16 fp16 */
    const uint8_t *codes = block_codes + (h0 + hh) * LANES * 4;
    const uint8_t *scales = block_scales + (h0 + hh) * LANES * 2;
    const vf_t dw = VF_HALVES(scales);
    block_dot(format, codes, xq, b, T, dw, acc[hh]);
    if (format == KILN_TYPE_Q4_1_R16) { /* mins */
      KILN_UK_UNROLL
      for (int32_t t = 0; t < T; ++t)
        acc[hh][t] = VF_FMA(VF_HALVES(scales + 32), VF_SET1(xq[t].ds[b]), acc[hh][t]);
    }
  }
}

/* Rows [h0*LANES, (h0+H)*LANES) - H registers of rows, H = 1 or HALVES - of the NG groups
 * g, g + gstep, ..., for tokens t0..t0+T-1 (NG, H and T constant after inlining, T <= TT,
 * NG <= DECODE_STREAMS). Decode (T = 1) takes all of a group's halves in one walk, so each
 * 64-byte code line is read once, whole, from DRAM; walking the halves one after another
 * read half of every line from DRAM and the other half again from L2 (AVX2 on Zen 3,
 * TinyLlama q4_0 decode, 2 threads: 52-70% -> 58-77% of the read). With NG > 1 (decode
 * only) a block of each group is taken in turn: NG forward streams (see DECODE_STREAMS). A
 * prefill tile takes one half of one group (its T accumulators per half would not fit the
 * registers twice), except AVX2's q4 tile (block_dot_q4_group). */
KILN_UK_INLINE void tile(const packed_args_t *a, uint32_t format, int64_t g, int64_t gstep,
                         int32_t NG, int32_t h0, int32_t H, int32_t t0, int32_t T,
                         float *stash) {
  qact_t xq[TT];
  vf_t acc[DECODE_STREAMS][HALVES][TT];
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    xq[t] = packed_qact(a, t0 + t);
    KILN_UK_UNROLL
    for (int32_t k = 0; k < NG; ++k)
      KILN_UK_UNROLL
      for (int32_t h = 0; h < H; ++h)
        acc[k][h][t] = VF_ZERO();
  }
  /* the weights' units in stream order: the header line, then each block's codes */
  const int32_t ub = (int32_t)kiln_packed_unit_blocks(format);
  const int64_t cb = (int64_t)kiln_packed_code_bytes(format);
  const int64_t unit_bytes = (int64_t)kiln_packed_unit_bytes(format);
  const uint8_t *unit[DECODE_STREAMS];
  KILN_UK_UNROLL
  for (int32_t k = 0; k < NG; ++k)
    unit[k] = a->w + (g + k * gstep) * a->group_stride;
  /* Decode with AVX512-VNNI: each lane its own copy of the token's pointers, which an
   * empty asm hides from the compiler, so every vpdpbusd and scale product loads its
   * activation operand as an embedded broadcast ({1to16}) instead of the lanes sharing
   * register broadcasts. With q4_0's loaded correction (block_dot), the q4_0 loop over a
   * unit of both lanes fell from 150 to 118 instructions: faster from cache, no change from
   * DRAM (docs/perf.md, "Folded activation broadcasts in q4 decode"). */
  const qact_t *lane_x[DECODE_STREAMS];
  KILN_UK_UNROLL
  for (int32_t k = 0; k < NG; ++k)
    lane_x[k] = xq;
#if DECODE_FOLDED
  qact_t lane_copy[DECODE_STREAMS];
  if (T == 1)
    KILN_UK_UNROLL
    for (int32_t k = 0; k < NG; ++k) {
      lane_copy[k] = xq[0];
      __asm__ volatile("" : "+r"(lane_copy[k].q), "+r"(lane_copy[k].d), "+r"(lane_copy[k].o));
      lane_x[k] = &lane_copy[k];
    }
#endif
  int32_t b = 0;
  /* Decode: whole units, their blocks unrolled - no test for the unit's end per block, and
   * none of the NG pointer copies it cost. Prefill tiles, unrolled too, spilled, so they
   * keep the block loop (docs/perf.md, "Decode by whole units"). */
  if (T == 1)
    for (; b + ub <= a->nb; b += ub) {
      KILN_UK_UNROLL
      for (int32_t j = 0; j < ub; ++j)
        KILN_UK_UNROLL
        for (int32_t k = 0; k < NG; ++k)
          tile_block(format, unit[k] + 64 + j * cb, unit[k] + j * 32, lane_x[k], b + j, h0,
                     H, T, acc[k]);
      KILN_UK_UNROLL
      for (int32_t k = 0; k < NG; ++k)
        unit[k] += unit_bytes;
    }
  for (int32_t j = 0; b < a->nb; ++b) {
    KILN_UK_UNROLL
    for (int32_t k = 0; k < NG; ++k)
      tile_block(format, unit[k] + 64 + j * cb, unit[k] + j * 32, lane_x[k], b, h0, H, T,
                 acc[k]);
    if (++j == ub) {
      j = 0;
      KILN_UK_UNROLL
      for (int32_t k = 0; k < NG; ++k)
        unit[k] += unit_bytes;
    }
  }
  KILN_UK_UNROLL
  for (int32_t k = 0; k < NG; ++k)
    KILN_UK_UNROLL
    for (int32_t t = 0; t < T; ++t)
      KILN_UK_UNROLL
      for (int32_t h = 0; h < H; ++h) {
        if (stash) /* decode_stashed: lane k's run */
          vf_store_rows(stash + k * STASH_ROWS + (h0 + h) * LANES, acc[k][h][t], LANES);
        else
          packed_store(a, g + k * gstep, h0 + h, t0 + t, acc[k][h][t]);
      }
}

/* Decode of groups g0.. (and of NG lanes gstep groups apart) with a fused store step: the
 * results of up to STASH_GROUPS groups per lane are held, then go through the store step as
 * one run of rows per lane, instead of one call per group (a call, a mode dispatch and one
 * vector of SwiGLU or a scalar residual loop in the middle of the weight stream; docs/perf.md,
 * "Decode stores batched per lane; tapered tasks").
 * Same sums and the same float steps per row: the same bits. */
KILN_UK_INLINE void decode_stashed(const packed_args_t *a, uint32_t format, int64_t g0,
                                   int64_t g1, int64_t gstep, int32_t NG) {
  float stash[DECODE_STREAMS * STASH_ROWS] __attribute__((aligned(64)));
  for (int64_t c0 = g0; c0 < g1; c0 += STASH_GROUPS) {
    const int64_t c1 = KILN_UK_MIN(g1, c0 + STASH_GROUPS);
    for (int64_t g = c0; g < c1; ++g)
      tile(a, format, g, gstep, NG, 0, HALVES, 0, 1, stash + (g - c0) * GROUP_ROWS);
    for (int32_t k = 0; k < NG; ++k) {
      const int64_t r0 = (c0 + k * gstep) * GROUP_ROWS;
      const int64_t rows = KILN_UK_MIN((c1 - c0) * GROUP_ROWS, a->out_features - r0);
      packed_store_fused(a, 0, r0, stash + k * STASH_ROWS, (int32_t)rows);
    }
  }
}

/* Tokens t.. of H registers of rows from half h: full tiles, then one constant-size
 * remainder tile. */
KILN_UK_INLINE void group_tokens(const packed_args_t *a, uint32_t format, int64_t g, int32_t h,
                                 int32_t H, int32_t t) {
  for (; t + TT <= a->n; t += TT)
    tile(a, format, g, 0, 1, h, H, t, TT, NULL);
  switch (a->n - t) {
  case 0: break;
  case 1: tile(a, format, g, 0, 1, h, H, t, 1, NULL); break;
  case 2: tile(a, format, g, 0, 1, h, H, t, 2, NULL); break;
  case 3: tile(a, format, g, 0, 1, h, H, t, 3, NULL); break;
#if TT > 4
  case 4: tile(a, format, g, 0, 1, h, H, t, 4, NULL); break;
  case 5: tile(a, format, g, 0, 1, h, H, t, 5, NULL); break;
  case 6: tile(a, format, g, 0, 1, h, H, t, 6, NULL); break;
  default: tile(a, format, g, 0, 1, h, H, t, 7, NULL); break;
#endif
  }
}

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__GFNI__) && HALVES == 1
#define AMX_PREFILL 1
#define AMX_TOKENS 16 /* tokens per tile multiply (a tile's rows) */
/* Prefill with AMX (Sapphire Rapids and later): per block of 32, one tdpbssd (q4_1:
 * tdpbsud) multiplies 16 tokens' int8 activations (tile A, 16 x 32 bytes, straight from
 * qscratch) by one group's 16 rows of codes (tile B, 8 x 64 bytes: chunk j of the block is
 * B's row j, 4 codes of each row per lane, the layout vpdpbusd reads; made signed, q4's
 * nibbles split, by amx_unpack a few blocks ahead) into 16 x 16 int32 sums (tile C), the
 * exact sums vpdpbusd's path gets after its offset correction. C goes
 * through memory to registers, where the block's scales are applied with the
 * same float steps as block_dot's: the same bits as the VNNI tile. Tiles: A 0/3, B 1/4,
 * C 2/5, two blocks in flight. The tile state is configured and released per call (per
 * task): a thread's tiles are its own. */
static const uint8_t kAmxConfig[64] __attribute__((aligned(64))) = {
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* palette 1 */
    32, 0, 64, 0, 64, 0, 32, 0, 64, 0, 64, 0, 0, 0, 0, 0, /* bytes per row, tiles 0-7 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* tiles 8-15 */
    16, 8, 16, 16, 8, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* rows */
};

/* acc[t] += block b's C (cbuf) for the 16 tokens at xq, as block_dot's one_chain step (the
 * weights' offsets are already in C: amx_unpack). The tokens' scales of block b are d[0, 16)
 * (amx_groups' copy, one pointer instead of 16 that the compiler spills). */
KILN_UK_INLINE void amx_add_block(uint32_t format, const int32_t *cbuf, const uint8_t *scales,
                                  const qact_t *xq, const float *d, int32_t b, vf_t *acc) {
  const vf_t dw = VF_HALVES(scales);
  KILN_UK_UNROLL
  for (int32_t t = 0; t < AMX_TOKENS; ++t) {
    acc[t] = add_block(acc[t], VI_LOAD(cbuf + 16 * t), dw, d[t]);
    if (format == KILN_TYPE_Q4_1_R16) /* mins */
      acc[t] = VF_FMA(VF_HALVES(scales + 32), VF_SET1(xq[t].ds[b]), acc[t]);
  }
}

/* A GF(2) affine map per byte (vgf2p8affineqb: result bit i = parity(byte 7 - i of the
 * matrix AND the byte) XOR bit i of the constant) splits a q4 byte's nibbles in one
 * instruction each: bits 0-2 of the low (high) nibble stay, and bit 3 (7) fills bits 3-7,
 * flipped for q4_0 (constant 0xf8), which is q - 8 as a signed byte. */
#define AMX_Q4_0_LOW 0x0102040808080808LL
#define AMX_Q4_0_HIGH 0x1020408080808080LL
#define AMX_Q4_1_LOW 0x0102040800000000LL /* q4_1: the nibble itself */
#define AMX_Q4_1_HIGH 0x1020408000000000LL

/* Block b's codes as B's 8 rows of 64 bytes at buf, signed where the format has an offset
 * (q4_0's q + 8 less 8, q8's q + 128 flipped to q): the exact int32 sums block_dot gets by
 * subtracting the offset times the activations' code sum, with no work per token. */
KILN_UK_INLINE void amx_unpack(uint32_t format, const uint8_t *codes, uint8_t *buf) {
  if (format == KILN_TYPE_Q8_0_R16) {
    for (int32_t k = 0; k < 8; ++k)
      _mm512_store_si512((void *)(buf + k * 64), VI_XOR80(VI_LOAD(codes + k * 64)));
    return;
  }
  const int q4_0 = format == KILN_TYPE_Q4_0_R16;
  const vi_t low = _mm512_set1_epi64(q4_0 ? AMX_Q4_0_LOW : AMX_Q4_1_LOW);
  const vi_t high = _mm512_set1_epi64(q4_0 ? AMX_Q4_0_HIGH : AMX_Q4_1_HIGH);
  for (int32_t k = 0; k < 4; ++k) {
    const vi_t raw = VI_LOAD(codes + k * 64);
    if (q4_0) { /* the constant is an immediate */
      _mm512_store_si512((void *)(buf + k * 64), _mm512_gf2p8affine_epi64_epi8(raw, low, 0xf8));
      _mm512_store_si512((void *)(buf + (4 + k) * 64),
                         _mm512_gf2p8affine_epi64_epi8(raw, high, 0xf8));
    } else {
      _mm512_store_si512((void *)(buf + k * 64), _mm512_gf2p8affine_epi64_epi8(raw, low, 0));
      _mm512_store_si512((void *)(buf + (4 + k) * 64),
                         _mm512_gf2p8affine_epi64_epi8(raw, high, 0));
    }
  }
}

/* C (tile 2 or 5, by parity) = A (0 or 3: 16 tokens' codes at x, rows xs apart) times B
 * (1 or 4, at w). Tile numbers are immediates, hence the macro. */
#define AMX_MUL(format, A, B, C, w, x, xs)                                                     \
  do {                                                                                         \
    _tile_loadd(B, w, 64);                                                                     \
    _tile_loadd(A, x, xs);                                                                     \
    _tile_zero(C);                                                                             \
    if ((format) == KILN_TYPE_Q4_1_R16)                                                        \
      _tile_dpbsud(C, A, B);                                                                   \
    else                                                                                       \
      _tile_dpbssd(C, A, B);                                                                   \
  } while (0)
KILN_UK_INLINE void amx_mul(uint32_t format, int32_t parity, const uint8_t *w, const int8_t *x,
                            int64_t xs) {
  if (parity == 0)
    AMX_MUL(format, 0, 1, 2, w, x, xs);
  else
    AMX_MUL(format, 3, 4, 5, w, x, xs);
}
KILN_UK_INLINE void amx_store(int32_t parity, int32_t *cbuf) {
  if (parity == 0)
    _tile_stored(2, cbuf, 64);
  else
    _tile_stored(5, cbuf, 64);
}

#define AMX_RING 4 /* blocks unpacked ahead: a tile load right after the stores stalls */

/* One group's 16 rows for the 16 tokens from t0, whose activation scales are dt (block b's
 * at dt + 16 b). Block b's multiply is issued before block b - 1's sums are read back and
 * scaled, so the two overlap. */
KILN_UK_INLINE void amx_tile(const packed_args_t *a, uint32_t format, int64_t g, int32_t t0,
                             const float *dt) {
  int32_t cbuf[AMX_TOKENS * 16] __attribute__((aligned(64)));
  uint8_t ring[AMX_RING][512] __attribute__((aligned(64)));
  qact_t xq[AMX_TOKENS];
  vf_t acc[AMX_TOKENS];
  KILN_UK_UNROLL
  for (int32_t t = 0; t < AMX_TOKENS; ++t) {
    xq[t] = packed_qact(a, t0 + t);
    acc[t] = VF_ZERO();
  }
  const uint8_t *grp = a->w + g * a->group_stride;
  const int8_t *x = xq[0].q;
  const int64_t xs = a->qx_stride;
  const int32_t nb = a->nb;
  for (int32_t b = 0; b < AMX_RING - 1 && b < nb; ++b)
    amx_unpack(format, grp + kiln_packed_codes_offset(format, (uint64_t)b), ring[b]);
  for (int32_t b = 0; b < nb; ++b) {
    amx_mul(format, b & 1, ring[b % AMX_RING], x + (int64_t)b * KILN_PACK_BLOCK, xs);
    const int32_t ahead = b + AMX_RING - 1;
    if (ahead < nb)
      amx_unpack(format, grp + kiln_packed_codes_offset(format, (uint64_t)ahead),
                 ring[ahead % AMX_RING]);
    if (b > 0) {
      amx_store((b - 1) & 1, cbuf);
      amx_add_block(format, cbuf, grp + kiln_packed_scales_offset(format, (uint64_t)(b - 1)),
                    xq, dt + 16 * (b - 1), b - 1, acc);
    }
  }
  amx_store((nb - 1) & 1, cbuf);
  amx_add_block(format, cbuf, grp + kiln_packed_scales_offset(format, (uint64_t)(nb - 1)), xq,
                dt + 16 * (nb - 1), nb - 1, acc);
  KILN_UK_UNROLL
  for (int32_t t = 0; t < AMX_TOKENS; ++t)
    packed_store(a, g, 0, t0 + t, acc[t]);
}

/* Floats of activation scales amx_groups copies to its stack, 16 per block of a token tile:
 * rows of up to AMX_SCALES / 16 blocks (24576 inputs) take AMX; 48 KiB of stack. */
#define AMX_SCALES 12288

/* Groups [g0, g1) for every token: AMX tiles of 16 tokens, the rest (with the last chunk) in
 * vpdpbusd tiles. The token tiles go in chunks whose scales fit AMX_SCALES, copied
 * block-major (16 tokens' scales of a block side by side), each chunk over every group; 64
 * tokens of a 2048- or 5632-wide row are one chunk. One address for a block's 16 scales
 * instead of 16 spilled pointers, one per token (docs/perf.md, "AMX prefill"). */
KILN_UK_INLINE void amx_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                               int64_t g1) {
  const int32_t full = a->n / AMX_TOKENS * AMX_TOKENS, nb = a->nb;
  const int32_t chunk = AMX_SCALES / (AMX_TOKENS * nb) * AMX_TOKENS;
  float dt[AMX_SCALES] __attribute__((aligned(64)));
  _tile_loadconfig(kAmxConfig);
  for (int32_t c0 = 0; c0 < full; c0 += chunk) {
    const int32_t c1 = KILN_UK_MIN(full, c0 + chunk);
    for (int32_t t = c0; t < c1; ++t) {
      const float *d = packed_qact(a, t).d;
      float *tile = dt + (t - c0) / AMX_TOKENS * nb * AMX_TOKENS + t % AMX_TOKENS;
      for (int32_t b = 0; b < nb; ++b)
        tile[b * AMX_TOKENS] = d[b];
    }
    for (int64_t g = g0; g < g1; ++g) {
      for (int32_t t = c0; t < c1; t += AMX_TOKENS)
        amx_tile(a, format, g, t, dt + (t - c0) / AMX_TOKENS * nb * AMX_TOKENS);
      if (c1 == full && full < a->n) /* the group's rows still in L1 */
        group_tokens(a, format, g, 0, 1, full);
    }
  }
  _tile_release();
}
#else
#define AMX_PREFILL 0
#endif

KILN_UK_INLINE void packed_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                  int64_t g1) {
  if (a->n == 1) { /* decode: every half in one walk of each group */
    if (a->mode != KILN_UK_STORE_PLAIN) {
      decode_stashed(a, format, g0, g1, 0, 1);
      return;
    }
    for (int64_t g = g0; g < g1; ++g)
      tile(a, format, g, 0, 1, 0, HALVES, 0, 1, NULL);
    return;
  }
  if (Q4_GROUP_TILE && format != KILN_TYPE_Q8_0_R16) { /* AVX2 q4: 16-row tiles */
    for (int64_t g = g0; g < g1; ++g)
      group_tokens(a, format, g, 0, HALVES, 0);
    return;
  }
#if AMX_PREFILL
  if (a->n >= AMX_TOKENS && a->nb * AMX_TOKENS <= AMX_SCALES) {
    amx_groups(a, format, g0, g1);
    return;
  }
#endif
  for (int64_t g = g0; g < g1; ++g)
    for (int32_t h = 0; h < HALVES; ++h)
      group_tokens(a, format, g, h, 1, 0);
}

#if DECODE_STREAMS > 1
/* Lanes a decode walks: without AMX, q4 formats 2 and q8 DECODE_STREAMS (4), each the
 * fastest measured for its format; 8 lanes were slower for both (docs/perf.md, "x86 decode
 * walks 2 lanes for q4 and 4 for q8"). The AMX target (measured
 * with 4 on Sapphire Rapids, where decode also prefetches) keeps 4. */
#if defined(__AMX_TILE__)
#define DECODE_LANES(format) DECODE_STREAMS
#else
#define DECODE_LANES(format) ((format) == KILN_TYPE_Q8_0_R16 ? DECODE_STREAMS : 2)
#endif
/* Decode task `task` of n_tasks (linear_packed_entry.h): its share of each of the
 * format's lanes, a group of every lane at a time; the last task also takes the groups
 * past the lanes, one at a time. */
#define PACKED_DECODE_LANES DECODE_STREAMS /* the most lanes of any format */
#define PACKED_DECODE_LANES_OF(format) DECODE_LANES(format)
KILN_UK_INLINE void packed_decode_lanes(const packed_args_t *a, uint32_t format,
                                        int32_t task, int32_t n_tasks) {
  const int32_t lanes = DECODE_LANES(format); /* a constant after inlining */
  const int64_t lane = a->groups / lanes;
  int64_t r0, r1;
  kiln_uk_task_range_tapered(lane, task, n_tasks, KILN_UK_LINEAR_TASKS_PER_THREAD, &r0, &r1);
  if (a->mode != KILN_UK_STORE_PLAIN)
    decode_stashed(a, format, r0, r1, lane, lanes);
  else
    for (int64_t g = r0; g < r1; ++g)
      tile(a, format, g, lane, lanes, 0, HALVES, 0, 1, NULL);
  if (task == n_tasks - 1)
    packed_groups(a, format, lane * lanes, a->groups);
}
#endif

#include "x86/linear_packed_kquant.h" /* q4_K_r16, q6_K_r16 */

#include "linear_packed_entry.h"
