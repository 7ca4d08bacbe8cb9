/* kiln micro-kernels, x86: q4_K_r16, q5_K_r16 and q6_K_r16 (kiln/quant_packed.h) with the
 * integer dot products of linear_packed.c, which includes this file; packed_kquant.h states
 * the math and the float steps, which these follow to the bit.
 *
 * A sub-block is one 32-element activation block, so q4_K runs linear_packed.c's q4_1 block
 * step (block_dot) with the scale d * sc_j and minimum -dmin * m_j of each row unpacked into
 * lanes from the super-block's header (a few integer operations per sub-block, against 8 dot
 * products). q5_K takes q4_K's scales and float steps, its codes (0..31) rebuilt from the
 * nibbles and the fifth chunk's bits (a shift, an and and an or per register). q6_K rebuilds
 * its 6-bit codes (0..63) from the nibble chunks and the 2-bit chunks, takes one integer sum
 * per 16-element half (two chains), and weights them by the int8 scales in int32. Decode
 * walks a group's halves in one pass (each line read once); prefill tiles TT tokens on one
 * register of rows, the codes decoded once per tile.
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_X86_LINEAR_PACKED_KQUANT_H_
#define KILN_CODEGEN_CPU_UKERNELS_X86_LINEAR_PACKED_KQUANT_H_

#if HALVES == 1
#define KQ_U8_LANES(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p)))
#define KQ_S8_LANES(p) _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p)))
#define KQ_SRL32(a, n) _mm512_srli_epi32(a, n)
#define KQ_SLL32(a, n) _mm512_slli_epi32(a, n)
#define KQ_SLL16(a, n) _mm512_slli_epi16(a, n)
#define KQ_SRL16(a, n) _mm512_srli_epi16(a, n)
#define KQ_OR(a, b) _mm512_or_si512(a, b)
#define KQ_MULLO(a, b) _mm512_mullo_epi32(a, b)
#define KQ_NEG(v)                                                                              \
  _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), VI_SET1((int)0x80000000u)))
#else
#define KQ_U8_LANES(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
#define KQ_S8_LANES(p) _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
#define KQ_SRL32(a, n) _mm256_srli_epi32(a, n)
#define KQ_SLL32(a, n) _mm256_slli_epi32(a, n)
#define KQ_SLL16(a, n) _mm256_slli_epi16(a, n)
#define KQ_SRL16(a, n) _mm256_srli_epi16(a, n)
#define KQ_OR(a, b) _mm256_or_si256(a, b)
#define KQ_MULLO(a, b) _mm256_mullo_epi32(a, b)
#define KQ_NEG(v)                                                                              \
  _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(v), VI_SET1((int)0x80000000u)))
#endif

#ifndef KQ_LANES
#define KQ_LANES 4 /* decode streams per task; see kq_tile */
#endif
#define KQ_MAX_LANES 4

/* Chunk k's 2-bit fields (bits 2k, 2k + 1 of each byte of h) moved to bits 4-5. */
KILN_UK_INLINE vi_t kq6_high(vi_t h, int32_t k) {
  const vi_t mask = VI_SET1_8(0x30);
  switch (k) {
  case 0: return VI_AND(KQ_SLL16(h, 4), mask);
  case 1: return VI_AND(KQ_SLL16(h, 2), mask);
  case 2: return VI_AND(h, mask);
  default: return VI_AND(KQ_SRL16(h, 2), mask);
  }
}

/* Chunk k's fifth bits (bit k of each byte of h for elements 4k.., bit 4 + k for 16 + 4k..)
 * at bit 4, the rest zero. */
KILN_UK_INLINE vi_t kq5_low(vi_t h, int32_t k) {
  const vi_t mask = VI_SET1_8(0x10);
  switch (k) {
  case 0: return VI_AND(KQ_SLL16(h, 4), mask);
  case 1: return VI_AND(KQ_SLL16(h, 3), mask);
  case 2: return VI_AND(KQ_SLL16(h, 2), mask);
  default: return VI_AND(KQ_SLL16(h, 1), mask);
  }
}
KILN_UK_INLINE vi_t kq5_high(vi_t h, int32_t k) {
  const vi_t mask = VI_SET1_8(0x10);
  switch (k) {
  case 0: return VI_AND(h, mask);
  case 1: return VI_AND(KQ_SRL16(h, 1), mask);
  case 2: return VI_AND(KQ_SRL16(h, 2), mask);
  default: return VI_AND(KQ_SRL16(h, 3), mask);
  }
}

/* One q5_K sub-block (block b) of one register of rows for T tokens: acc[t] += isum * dw *
 * d_x, isum over the 5-bit codes; the caller adds the minimum, as for q4_K. */
KILN_UK_INLINE void kq5_block_dot(const uint8_t *codes, const qact_t *xq, int32_t b, int32_t T,
                                  vf_t dw, vf_t *acc) {
  const vi_t low4 = VI_SET1_8(15);
  const vi_t h = VI_LOAD(codes + 256);
  vi_t lo[4], hi[4];
  KILN_UK_UNROLL
  for (int32_t k = 0; k < 4; ++k) {
    const vi_t raw = VI_LOAD(codes + k * 64);
    lo[k] = KQ_OR(VI_AND(raw, low4), kq5_low(h, k));
    hi[k] = KQ_OR(VI_AND(VI_SRL4(raw), low4), kq5_high(h, k));
  }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    const int8_t *xb = xq[t].q + b * KILN_PACK_BLOCK;
#if Q8_BIAS /* VNNI */
    vi_t i0 = VI_ZERO(), i1 = VI_ZERO();
    KILN_UK_UNROLL
    for (int32_t k = 0; k < 4; ++k) {
      i0 = DOT_U8S8(i0, lo[k], bcast4(xb + 4 * k));
      i1 = DOT_U8S8(i1, hi[k], bcast4(xb + 16 + 4 * k));
    }
    const vi_t isum = VI_ADD(i0, i1);
#else
    /* a code (<= 31) times |x| <= 127 is at most 7874 per pair, so one half's 4 chunks of
     * pairs add in int16 (at most 31496) */
    vi_t p0 = VI_ZERO(), p1 = VI_ZERO();
    KILN_UK_UNROLL
    for (int32_t k = 0; k < 4; ++k) {
      p0 = I16_ADD(p0, U8S8_PAIRS(lo[k], bcast4(xb + 4 * k)));
      p1 = I16_ADD(p1, U8S8_PAIRS(hi[k], bcast4(xb + 16 + 4 * k)));
    }
    const vi_t isum = VI_ADD(I16_WIDEN(p0), I16_WIDEN(p1));
#endif
    acc[t] = add_block(acc[t], isum, dw, xq[t].d[b]);
  }
}

/* One q6_K sub-block (block b of the activations) of one register of rows for T tokens:
 * acc[t] += (sc0 * (isum0 - 32 s0) + sc1 * (isum1 - 32 s1)) * (d * d_x). */
KILN_UK_INLINE void kq6_block_dot(const uint8_t *codes, const qact_t *xq, int32_t b, int32_t T,
                                  vf_t d, vi_t sc0, vi_t sc1, vf_t *acc) {
  const vi_t low4 = VI_SET1_8(15);
  const vi_t h0 = VI_LOAD(codes + 256), h1 = VI_LOAD(codes + 320);
  vi_t lo[4], hi[4];
  KILN_UK_UNROLL
  for (int32_t k = 0; k < 4; ++k) {
    const vi_t raw = VI_LOAD(codes + k * 64);
    lo[k] = KQ_OR(VI_AND(raw, low4), kq6_high(h0, k));
    hi[k] = KQ_OR(VI_AND(VI_SRL4(raw), low4), kq6_high(h1, k));
  }
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t) {
    const int8_t *xb = xq[t].q + b * KILN_PACK_BLOCK;
    const int32_t s0 = xq[t].o[b], s1 = xq[t].s[b] - s0;
#if Q8_BIAS /* VNNI */
    vi_t i0 = VI_SET1(-32 * s0), i1 = VI_SET1(-32 * s1);
    KILN_UK_UNROLL
    for (int32_t k = 0; k < 4; ++k) {
      i0 = DOT_U8S8(i0, lo[k], bcast4(xb + 4 * k));
      i1 = DOT_U8S8(i1, hi[k], bcast4(xb + 16 + 4 * k));
    }
#else
    /* a code (<= 63) times |x| <= 127 is at most 8001, so two chunks' pairs add in int16 */
    vi_t i0 = VI_SET1(-32 * s0), i1 = VI_SET1(-32 * s1);
    KILN_UK_UNROLL
    for (int32_t k = 0; k < 4; k += 2) {
      i0 = VI_ADD(i0, I16_WIDEN(I16_ADD(U8S8_PAIRS(lo[k], bcast4(xb + 4 * k)),
                                        U8S8_PAIRS(lo[k + 1], bcast4(xb + 4 * k + 4)))));
      i1 = VI_ADD(i1, I16_WIDEN(I16_ADD(U8S8_PAIRS(hi[k], bcast4(xb + 16 + 4 * k)),
                                        U8S8_PAIRS(hi[k + 1], bcast4(xb + 20 + 4 * k)))));
    }
#endif
    acc[t] = add_block(acc[t], VI_ADD(KQ_MULLO(sc0, i0), KQ_MULLO(sc1, i1)), d, xq[t].d[b]);
  }
}

/* Rows [h0*LANES, (h0+H)*LANES) of the NG groups g, g + gstep, ... for tokens t0..t0+T-1
 * (NG, H and T constant after inlining). Decode takes every half of NG groups (a sub-block
 * of each in turn: NG forward streams in flight, see DECODE_STREAMS); a prefill tile one
 * half of one group. Results go to y, or with `stash` to lane k's run (kq_decode_stashed). */
KILN_UK_INLINE void kq_tile(const packed_args_t *a, uint32_t format, int64_t g, int64_t gstep,
                            int32_t NG, int32_t h0, int32_t H, int32_t t0, int32_t T,
                            float *stash) {
  qact_t xq[TT];
  vf_t acc[KQ_MAX_LANES][HALVES][TT];
  const uint8_t *grp[KQ_MAX_LANES];
  KILN_UK_UNROLL
  for (int32_t t = 0; t < T; ++t)
    xq[t] = packed_qact(a, t0 + t);
  KILN_UK_UNROLL
  for (int32_t k = 0; k < NG; ++k) {
    grp[k] = a->w + (g + k * gstep) * a->group_stride;
    KILN_UK_UNROLL
    for (int32_t h = 0; h < H; ++h)
      KILN_UK_UNROLL
      for (int32_t t = 0; t < T; ++t)
        acc[k][h][t] = VF_ZERO();
  }
  const int32_t ns = a->nb / 8;
  const vi_t three = VI_SET1(3), fifteen = VI_SET1(15);
  for (int32_t s = 0; s < ns; ++s) {
    const uint64_t so = kiln_packed_super_offset(format, (uint64_t)s);
    const uint64_t dq = kiln_packed_q6_k_d_offset((uint64_t)s); /* q6_K's d */
    /* q4_K/q5_K: the super-block's d, -dmin and top scale bits, per lane and register */
    vf_t d[KQ_MAX_LANES][HALVES], ndmin[KQ_MAX_LANES][HALVES];
    vi_t high[KQ_MAX_LANES][HALVES];
    if (format != KILN_TYPE_Q6_K_R16)
      KILN_UK_UNROLL
      for (int32_t k = 0; k < NG; ++k)
        KILN_UK_UNROLL
        for (int32_t h = 0; h < H; ++h) {
          const uint8_t *sb = grp[k] + so;
          const int32_t row0 = (h0 + h) * LANES;
          d[k][h] = VF_HALVES(sb + row0 * 2);
          ndmin[k][h] = KQ_NEG(VF_HALVES(sb + 32 + row0 * 2));
          high[k][h] = VI_LOAD(sb + 192 + row0 * 4);
        }
    KILN_UK_NO_UNROLL
    for (int32_t j = 0; j < 8; ++j) {
      const int32_t b = s * 8 + j;
      KILN_UK_UNROLL
      for (int32_t k = 0; k < NG; ++k)
        KILN_UK_UNROLL
        for (int32_t h = 0; h < H; ++h) {
          const uint8_t *sb = grp[k] + so;
          const int32_t row0 = (h0 + h) * LANES;
          if (format != KILN_TYPE_Q6_K_R16) {
            const vi_t lo = KQ_U8_LANES(sb + 64 + j * 16 + row0);
            const vi_t hb = KQ_SRL32(high[k][h], 4 * j);
            const vi_t sc = KQ_OR(VI_AND(lo, fifteen), KQ_SLL32(VI_AND(hb, three), 4));
            const vi_t m = KQ_OR(KQ_SRL32(lo, 4), KQ_SLL32(VI_AND(KQ_SRL32(hb, 2), three), 4));
            const vf_t dw = VF_MUL(d[k][h], VF_FROM_I(sc));
            const vf_t mw = VF_MUL(ndmin[k][h], VF_FROM_I(m));
            if (format == KILN_TYPE_Q4_K_R16)
              block_dot(KILN_TYPE_Q4_1_R16, sb + KILN_Q4_K_R16_CODES + j * 256 + row0 * 4, xq,
                        b, T, dw, acc[k][h]);
            else
              kq5_block_dot(sb + KILN_Q4_K_R16_CODES + j * KILN_Q5_K_R16_SUB_BYTES + row0 * 4,
                            xq, b, T, dw, acc[k][h]);
            KILN_UK_UNROLL
            for (int32_t t = 0; t < T; ++t)
              acc[k][h][t] = VF_FMA(mw, VF_SET1(xq[t].ds[b]), acc[k][h][t]);
          } else {
            kq6_block_dot(sb + KILN_Q6_K_R16_CODES + j * KILN_Q6_K_R16_SUB_BYTES + row0 * 4, xq,
                          b, T, VF_HALVES(grp[k] + dq + row0 * 2),
                          KQ_S8_LANES(sb + j * 32 + row0),
                          KQ_S8_LANES(sb + j * 32 + 16 + row0), acc[k][h]);
          }
        }
    }
  }
  KILN_UK_UNROLL
  for (int32_t k = 0; k < NG; ++k)
    KILN_UK_UNROLL
    for (int32_t t = 0; t < T; ++t)
      KILN_UK_UNROLL
      for (int32_t h = 0; h < H; ++h) {
        if (stash)
          vf_store_rows(stash + k * STASH_ROWS + (h0 + h) * LANES, acc[k][h][t], LANES);
        else
          packed_store(a, g + k * gstep, h0 + h, t0 + t, acc[k][h][t]);
      }
}

/* Decode with a fused store step: up to STASH_GROUPS groups' results per lane held, then
 * one run of rows per lane through the store step (as linear_packed.c's decode_stashed). */
KILN_UK_INLINE void kq_decode_stashed(const packed_args_t *a, uint32_t format, int64_t g0,
                                      int64_t g1, int64_t gstep, int32_t NG) {
  float stash[KQ_MAX_LANES * STASH_ROWS] __attribute__((aligned(64)));
  for (int64_t c0 = g0; c0 < g1; c0 += STASH_GROUPS) {
    const int64_t c1 = KILN_UK_MIN(g1, c0 + STASH_GROUPS);
    for (int64_t g = c0; g < c1; ++g)
      kq_tile(a, format, g, gstep, NG, 0, HALVES, 0, 1, stash + (g - c0) * GROUP_ROWS);
    for (int32_t k = 0; k < NG; ++k) {
      const int64_t r0 = (c0 + k * gstep) * GROUP_ROWS;
      const int64_t rows = KILN_UK_MIN((c1 - c0) * GROUP_ROWS, a->out_features - r0);
      packed_store_fused(a, 0, r0, stash + k * STASH_ROWS, (int32_t)rows);
    }
  }
}

/* Tokens of one register of rows: full tiles, then one constant-size remainder tile. */
KILN_UK_INLINE void kq_group_tokens(const packed_args_t *a, uint32_t format, int64_t g,
                                    int32_t h) {
  int32_t t = 0;
  for (; t + TT <= a->n; t += TT)
    kq_tile(a, format, g, 0, 1, h, 1, t, TT, NULL);
  switch (a->n - t) {
  case 0: break;
  case 1: kq_tile(a, format, g, 0, 1, h, 1, t, 1, NULL); break;
  case 2: kq_tile(a, format, g, 0, 1, h, 1, t, 2, NULL); break;
  case 3: kq_tile(a, format, g, 0, 1, h, 1, t, 3, NULL); break;
#if TT > 4
  case 4: kq_tile(a, format, g, 0, 1, h, 1, t, 4, NULL); break;
  case 5: kq_tile(a, format, g, 0, 1, h, 1, t, 5, NULL); break;
  case 6: kq_tile(a, format, g, 0, 1, h, 1, t, 6, NULL); break;
  default: kq_tile(a, format, g, 0, 1, h, 1, t, 7, NULL); break;
#endif
  }
}

KILN_UK_INLINE void kq_x86_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                  int64_t g1) {
  if (a->n == 1) { /* decode: the task's groups as KQ_LANES forward streams */
    const int64_t lane = (g1 - g0) / KQ_LANES, rest = g0 + lane * KQ_LANES;
    if (a->mode != KILN_UK_STORE_PLAIN) {
      kq_decode_stashed(a, format, g0, g0 + lane, lane, KQ_LANES);
      kq_decode_stashed(a, format, rest, g1, 0, 1);
      return;
    }
    for (int64_t i = 0; i < lane; ++i)
      kq_tile(a, format, g0 + i, lane, KQ_LANES, 0, HALVES, 0, 1, NULL);
    for (int64_t g = rest; g < g1; ++g)
      kq_tile(a, format, g, 0, 1, 0, HALVES, 0, 1, NULL);
    return;
  }
  for (int64_t g = g0; g < g1; ++g)
    for (int32_t h = 0; h < HALVES; ++h)
      kq_group_tokens(a, format, g, h);
}
#define packed_kquant_groups kq_x86_groups

#endif /* KILN_CODEGEN_CPU_UKERNELS_X86_LINEAR_PACKED_KQUANT_H_ */
