/* kiln runtime-min: k-quant encoders (q4_K, q5_K, q6_K), byte-identical with ggml's
 * reference quantizers quantize_row_q4_K_ref, quantize_row_q5_K_ref and
 * quantize_row_q6_K_ref (ggml/src/ggml-quants.c, with their helpers make_qkx2_quants,
 * make_qx_quants and nearest_int). Checked against ggml's own output in
 * ../shared/testdata/ggml-quant-vectors.bin (every row, gcc and clang, -O0/-O2, with and
 * without FMA in the target).
 *
 * These encoders search for scales, and a search decides by comparing rounded floats, so
 * one rounding done differently can pick another scale and change many bytes. Every float
 * operation is therefore kept as ggml writes it, in the same order and the same types (an
 * int code is converted to float where ggml's `w*l` converts it). Three things keep that
 * true everywhere:
 *  - no FMA contraction: ggml's reference build does not fuse (its x86-64 base library has
 *    no FMA in the target), while GCC in GNU mode fuses across statements whenever the
 *    target has FMA (aarch64, -march=x86-64-v3) and clang fuses within an expression. The
 *    pragmas below turn that off for this file, for both compilers (clang's
 *    -ffp-contract=fast and -ffast-math override them: do not build this file with those).
 *  - nearest_int is ggml's own add-1.5*2^23 trick, done on the bits, and fabsf clears the
 *    sign bit; sqrtf (q4_K/q5_K weights) is libm's, correctly rounded as IEEE requires (the
 *    freestanding Hexagon build's own, runtime-min/src/platform/freestanding, is too).
 *  - no undefined behaviour on any input (inf, NaN, huge values): nearest_int is bit
 *    arithmetic defined for every float, codes are clamped before they index or pack, and
 *    int -> int8 narrowing is done explicitly. For non-finite input the bytes are
 *    deterministic but not promised equal to ggml's (its NaN payloads are the FPU's).
 *
 * Block layouts are in kiln/quant_blocks.h; each block is built in a local struct and
 * copied out, since dst need not be aligned.
 */
#include <math.h>
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "kquant_scales.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off") /* GCC does not implement the STDC pragma */
#else
#pragma STDC FP_CONTRACT OFF
#endif

/* The encoders behind kiln_quantize (same contract as kiln_quantize_row_q3_0: n a multiple
 * of QK_K, dst exactly n/QK_K blocks, any alignment). Declared here as well as in
 * kiln/quant.h; identical redeclarations are allowed. */
void kiln_quantize_row_q4_K(const float *src, void *dst, uint64_t n);
void kiln_quantize_row_q5_K(const float *src, void *dst, uint64_t n);
void kiln_quantize_row_q6_K(const float *src, void *dst, uint64_t n);

#define KQ_GROUP_MAX_EPS 1e-15f /* ggml's GROUP_MAX_EPS: a group below this is all zero */

static uint32_t kq_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float kq_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static int kq_min(int a, int b) { return a < b ? a : b; }
static int kq_max(int a, int b) { return a > b ? a : b; }

/* fabsf: clear the sign bit (so -0 gives +0 and a NaN stays that NaN, as fabsf does) */
static float kq_fabsf(float x) { return kq_from_bits(kq_bits(x) & 0x7fffffffu); }

/* ggml's nearest_int: adding 1.5 * 2^23 leaves round-to-nearest-even(v) in the low mantissa
 * bits for |v| < 2^22. Outside that range (ggml only asserts) the result is the same
 * garbage ggml gets, and it is pure bit arithmetic for every input, NaN and inf included. */
static int kq_nearest_int(float v) {
  const float t = v + 12582912.f;
  return (int)(kq_bits(t) & 0x007fffffu) - 0x00400000;
}

/* int -> int8 keeping the low 8 bits, as GCC and clang narrow (spelled out: no
 * implementation-defined conversion) */
static int8_t kq_to_i8(int v) {
  const int b = v & 0xff;
  return (int8_t)(b >= 128 ? b - 256 : b);
}

/* Packing of q4_K/q5_K's 8 6-bit scales and 8 6-bit mins into 12 bytes (ggml's
 * get_scale_min_k4 reads it back): j < 4 in the low 6 bits of bytes j and j+4, j >= 4 as
 * nibbles of byte j+4 with the top two bits in the spare bits of bytes j-4 and j. */
static void kq_pack_scale_min(uint8_t *q, int j, uint8_t ls, uint8_t lm) {
  if (j < 4) {
    q[j] = ls;
    q[j + 4] = lm;
  } else {
    q[j + 4] = (uint8_t)((ls & 0xf) | ((lm & 0xf) << 4));
    q[j - 4] = (uint8_t)(q[j - 4] | ((ls >> 4) << 6));
    q[j] = (uint8_t)(q[j] | ((lm >> 4) << 6));
  }
}

/* ggml's make_qkx2_quants with use_mad = false: codes L in 0..nmax for
 * x ~ scale * L - the_min (min <= 0). It starts from the min/max grid, then tries nstep+1
 * grids of (rmin + rdelta*is + nmax) steps over the range, fits scale and min to each by
 * weighted least squares, and keeps the fit of least weighted squared error (the first on
 * ties). n <= 32. */
static float kq_make_qkx2(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                          float *the_min, float rmin, float rdelta, int nstep) {
  uint8_t Laux[32];
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min)
      min = x[i];
    if (x[i] > max)
      max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0)
    min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i)
      L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = (float)nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = kq_nearest_int(iscale * (x[i] - min));
    L[i] = (uint8_t)kq_max(0, kq_min(nmax, l));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    const float w = weights[i];
    best_error += w * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = kq_nearest_int(iscale * (x[i] - min));
      l = kq_max(0, kq_min(nmax, l));
      Laux[i] = (uint8_t)l;
      const float w = weights[i];
      sum_l += w * (float)l;
      sum_l2 += w * (float)l * (float)l;
      sum_xl += w * (float)l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        const float w = weights[i];
        cur_error += w * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i)
          L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

/* ggml's make_qx_quants with rmse_type = 1 and no importance weights (w = x^2), as q6_K's
 * reference uses it: symmetric codes L in 0..2*nmax-1 (value nmax + l, l in -nmax..nmax-1)
 * for x ~ scale * l. The element of largest magnitude sets the grid; 18 neighbouring grids
 * (nmax +- 0.1*is steps) compete on the least-squares criterion sumlx^2 / suml2. */
static float kq_make_qx(int n, int nmax, const float *x, int8_t *L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = kq_fabsf(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < KQ_GROUP_MAX_EPS) { /* all zero */
    for (int i = 0; i < n; ++i)
      L[i] = 0;
    return 0.f;
  }
  float iscale = (float)-nmax / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = kq_nearest_int(iscale * x[i]);
    l = kq_max(-nmax, kq_min(nmax - 1, l));
    L[i] = (int8_t)(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * (float)l;
    suml2 += w * (float)l * (float)l;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0)
      continue;
    iscale = -((float)nmax + 0.1f * (float)is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = kq_nearest_int(iscale * x[i]);
      l = kq_max(-nmax, kq_min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * (float)l;
      suml2 += w * (float)l * (float)l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = kq_nearest_int(iscale * x[i]);
        L[i] = (int8_t)(nmax + kq_max(-nmax, kq_min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

/* The part q4_K and q5_K share (quantize_row_q{4,5}_K_ref up to the bit packing): per
 * 32-value sub-block a scale and min from make_qkx2_quants with weights |x| + rms(x), both
 * quantised to 6 bits against the block's largest (fp16 d and dmin), then every value
 * re-coded against the stored scale and min. A sub-block whose stored scale is 0 keeps the
 * codes make_qkx2_quants chose, as in ggml. L receives codes 0..nmax. */
static void kq_scale_min_block(const float *x, int nmax, float rmin, float rdelta, int nstep,
                               uint8_t scales12[K_SCALE_SIZE], kiln_half_t *out_d,
                               kiln_half_t *out_dmin, uint8_t L[QK_K]) {
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  float weights[32];
  float max_scale = 0; /* as the min is deducted, scales are never negative */
  float max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l)
      sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = sqrtf(sum_x2 / 32);
    for (int l = 0; l < 32; ++l)
      weights[l] = av_x + kq_fabsf(x[32 * j + l]);
    scales[j] = kq_make_qkx2(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], rmin, rdelta,
                             nstep);
    const float scale = scales[j];
    if (scale > max_scale)
      max_scale = scale;
    const float min = mins[j];
    if (min > max_min)
      max_min = min;
  }

  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < QK_K / 32; ++j) {
    /* ggml stores nearest_int into a uint8_t (keeping the low 8 bits), then clamps */
    uint8_t ls = (uint8_t)kq_nearest_int(inv_scale * scales[j]);
    uint8_t lm = (uint8_t)kq_nearest_int(inv_min * mins[j]);
    ls = ls < 63 ? ls : 63;
    lm = lm < 63 ? lm : 63;
    kq_pack_scale_min(scales12, j, ls, lm);
  }
  *out_d = kiln_fp32_to_fp16(max_scale / 63.f);
  *out_dmin = kiln_fp32_to_fp16(max_min / 63.f);

  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    kiln_kquant_scale_min(scales12, j, &sc, &m);
    const float d = kiln_fp16_to_fp32(*out_d) * sc;
    if (d == 0)
      continue;
    const float dm = kiln_fp16_to_fp32(*out_dmin) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = kq_nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = (uint8_t)kq_max(0, kq_min(nmax, l));
    }
  }
}

void kiln_quantize_row_q4_K(const float *src, void *dst, uint64_t n) {
  uint8_t *out = (uint8_t *)dst;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    const float *x = src + i * QK_K;
    kiln_block_q4_K_t b;
    uint8_t L[QK_K];
    kq_scale_min_block(x, 15, -1.f, 0.1f, 20, b.scales, &b.d, &b.dmin, L);
    /* 64 values per 32 bytes: the first 32 in the low nibbles, the next 32 in the high */
    for (int j = 0; j < QK_K; j += 64)
      for (int l = 0; l < 32; ++l)
        b.qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    memcpy(out + i * sizeof b, &b, sizeof b);
  }
}

void kiln_quantize_row_q5_K(const float *src, void *dst, uint64_t n) {
  uint8_t *out = (uint8_t *)dst;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    const float *x = src + i * QK_K;
    kiln_block_q5_K_t b;
    uint8_t L[QK_K];
    kq_scale_min_block(x, 31, -0.5f, 0.1f, 15, b.scales, &b.d, &b.dmin, L);
    /* low 4 bits as q4_K's nibbles; the 5th bit of value n + j (n a multiple of 64) goes to
     * qh[j] bit n/32, of value n + 32 + j to bit n/32 + 1 */
    memset(b.qh, 0, sizeof b.qh);
    uint8_t m1 = 1, m2 = 2;
    for (int nn = 0; nn < QK_K; nn += 64) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[nn + j];
        if (l1 > 15) {
          l1 -= 16;
          b.qh[j] |= m1;
        }
        int l2 = L[nn + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          b.qh[j] |= m2;
        }
        b.qs[nn / 2 + j] = (uint8_t)(l1 | (l2 << 4));
      }
      m1 = (uint8_t)(m1 << 2);
      m2 = (uint8_t)(m2 << 2);
    }
    memcpy(out + i * sizeof b, &b, sizeof b);
  }
}

/* quantize_row_q6_K_ref: per 16 values a signed scale from make_qx_quants(nmax 32), the
 * scales coded as int8 against the one of largest magnitude (which lands on -128: fp16
 * d = max_scale / -128), then every value re-coded in -32..31 against d * scale. */
static void quantize_block_q6_K(const float *x, kiln_block_q6_K_t *b) {
  int8_t L[QK_K];
  float scales[QK_K / 16];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    const float scale = kq_make_qx(16, 32, x + 16 * ib, L + 16 * ib);
    scales[ib] = scale;
    const float abs_scale = kq_fabsf(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  memset(b, 0, sizeof *b);
  if (max_abs_scale < KQ_GROUP_MAX_EPS) { /* all zero (d = fp16 0 is all-zero bits) */
    b->d = kiln_fp32_to_fp16(0.f);
    return;
  }
  const float iscale = -128.f / max_scale;
  b->d = kiln_fp32_to_fp16(1 / iscale);
  for (int ib = 0; ib < QK_K / 16; ++ib)
    b->scales[ib] = kq_to_i8(kq_min(127, kq_nearest_int(iscale * scales[ib])));

  for (int j = 0; j < QK_K / 16; ++j) {
    const float d = kiln_fp16_to_fp32(b->d) * b->scales[j];
    if (d == 0)
      continue; /* keeps make_qx_quants' codes, as ggml does */
    for (int ii = 0; ii < 16; ++ii) {
      int l = kq_nearest_int(x[16 * j + ii] / d);
      l = kq_max(-32, kq_min(31, l));
      L[16 * j + ii] = (int8_t)(l + 32);
    }
  }

  /* per 128 values: low nibbles of values l and l+64 share ql[l], of l+32 and l+96 share
   * ql[l+32]; the four top 2-bit pairs share qh[l] */
  for (int j = 0; j < QK_K; j += 128) {
    uint8_t *ql = b->ql + j / 2;
    uint8_t *qh = b->qh + j / 4;
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l] & 0xf;
      const int q2 = L[j + l + 32] & 0xf;
      const int q3 = L[j + l + 64] & 0xf;
      const int q4 = L[j + l + 96] & 0xf;
      ql[l] = (uint8_t)(q1 | (q3 << 4));
      ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
      qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                        ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
  }
}

void kiln_quantize_row_q6_K(const float *src, void *dst, uint64_t n) {
  uint8_t *out = (uint8_t *)dst;
  for (uint64_t i = 0; i < n / QK_K; ++i) {
    kiln_block_q6_K_t b;
    quantize_block_q6_K(src + i * QK_K, &b);
    memcpy(out + i * sizeof b, &b, sizeof b);
  }
}
