/* kiln runtime-min: float -> half conversion and the reference quantizers (f32, f16, q8_0,
 * q4_0, q4_1; the K-quants' in quantize_kquants.c, q3_0's in quantize_q3_0.c).
 *
 * The quantizers are ggml's reference algorithms (quantize_row_q8_0_ref,
 * quantize_row_q4_0_ref and quantize_row_q4_1_ref in ggml/src/ggml-quants.c) with the same
 * float operations in the same order, so they produce ggml's bytes exactly (checked against
 * llama.cpp's output by tests/unit/QuantizeTest.cpp). No libm: roundf is replaced by an
 * exact round-half-away-from-zero, and the q4 formats' truncating casts by a clamped one.
 * Blocks are built in a local struct and copied out, since dst need not be aligned. Host
 * byte order is assumed little-endian, as GGUF is.
 */
#include <float.h>
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "quant_args.h"

static uint32_t kiln_bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Pure integer conversion: identical on every host, whatever the FPU rounding mode. */
uint16_t kiln_fp32_to_fp16(float f) {
  const uint32_t x = kiln_bits_of(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) /* NaN: quiet, top 10 payload bits kept (as vcvtps2ph) */
    return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x47800000u) /* >= 65536 (and inf): inf */
    return (uint16_t)(sign | 0x7c00u);
  if (abs >= 0x38800000u) { /* >= 2^-14: a normal half, or 65520..65536 rounding to inf */
    uint32_t h = ((abs >> 23) - 112u) << 10 | ((abs >> 13) & 0x3ffu);
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
      ++h; /* a carry into the exponent is the right result, up to inf */
    return (uint16_t)(sign | h);
  }
  if (abs < 0x33000000u) /* < 2^-25: rounds to zero (2^-25 itself ties to even zero) */
    return sign;
  /* subnormal half: value = m * 2^(e - 150), in units of 2^-24 that is m >> (126 - e) */
  const uint32_t e = abs >> 23;
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e; /* 14..24 */
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (h & 1u)))
    ++h; /* may become 0x400, the smallest normal: right */
  return (uint16_t)(sign | h);
}

static float kiln_fabsf(float x) { return x < 0.0f ? -x : x; }

/* roundf for the q8_0 quantizer's range (|x| <= 127 and a little): half away from zero.
 * NaN (from non-finite input) gives 0 rather than undefined behaviour. */
static int8_t kiln_round_q8(float x) {
  if (!(x == x))
    return 0;
  if (x > 127.0f)
    return 127;
  if (x < -128.0f)
    return -128;
  int32_t i = (int32_t)x; /* truncates */
  const float frac = x - (float)i; /* exact */
  if (frac >= 0.5f)
    ++i;
  else if (frac <= -0.5f)
    --i;
  return (int8_t)(i > 127 ? 127 : i);
}

static void quantize_q8_0(const float *x, uint8_t *dst, uint64_t n) {
  for (uint64_t i = 0; i < n / QK8_0; ++i, x += QK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; ++j) {
      const float a = kiln_fabsf(x[j]);
      amax = amax > a ? amax : a;
    }
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    kiln_block_q8_0_t b;
    b.d = kiln_fp32_to_fp16(d);
    for (int j = 0; j < QK8_0; ++j)
      b.qs[j] = kiln_round_q8(x[j] * id);
    memcpy(dst + i * sizeof b, &b, sizeof b);
  }
}

/* (int8_t)(v) of ggml's q4 quantizers (v = x + 8.5f for q4_0, x + 0.5f for q4_1), defined
 * for every input: v is in [0.5, 16.5] for finite blocks; anything else is clamped. */
static int kiln_trunc_q4(float v) {
  if (!(v >= 0.0f))
    return 0;
  if (v >= 16.0f)
    return 16;
  return (int)v;
}

static void quantize_q4_0(const float *x, uint8_t *dst, uint64_t n) {
  for (uint64_t i = 0; i < n / QK4_0; ++i, x += QK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK4_0; ++j) {
      if (amax < kiln_fabsf(x[j])) {
        amax = kiln_fabsf(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    kiln_block_q4_0_t b;
    b.d = kiln_fp32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[QK4_0 / 2 + j] * id;
      const int q0 = kiln_trunc_q4(x0 + 8.5f);
      const int q1 = kiln_trunc_q4(x1 + 8.5f);
      b.qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
    }
    memcpy(dst + i * sizeof b, &b, sizeof b);
  }
}

/* Asymmetric: value = q * d + m with m the block minimum and d = (max - min) / 15. */
static void quantize_q4_1(const float *x, uint8_t *dst, uint64_t n) {
  for (uint64_t i = 0; i < n / QK4_1; ++i, x += QK4_1) {
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < QK4_1; ++j) {
      const float v = x[j];
      if (v < min)
        min = v;
      if (v > max)
        max = v;
    }
    const float d = (max - min) / ((1 << 4) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    kiln_block_q4_1_t b;
    b.d = kiln_fp32_to_fp16(d);
    b.m = kiln_fp32_to_fp16(min);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[QK4_1 / 2 + j] - min) * id;
      const int q0 = kiln_trunc_q4(x0 + 0.5f);
      const int q1 = kiln_trunc_q4(x1 + 0.5f);
      b.qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
    }
    memcpy(dst + i * sizeof b, &b, sizeof b);
  }
}

kiln_status_t kiln_quantize(uint32_t type, const float *src, void *dst, uint64_t n) {
  switch ((kiln_ggml_type_t)type) {
  case KILN_GGML_TYPE_F32:
  case KILN_GGML_TYPE_F16:
  case KILN_GGML_TYPE_Q8_0:
  case KILN_GGML_TYPE_Q4_0:
  case KILN_GGML_TYPE_Q4_1:
  case KILN_GGML_TYPE_Q4_K:
  case KILN_GGML_TYPE_Q5_K:
  case KILN_GGML_TYPE_Q6_K: break;
  default:
    if (type != KILN_TYPE_Q3_0)
      return KILN_STATUS_UNSUPPORTED;
  }
  int empty;
  KILN_RETURN_IF_ERROR(kiln_quant_check_args(type, src, dst, n, &empty));
  if (empty)
    return KILN_STATUS_OK;
  uint8_t *out = (uint8_t *)dst;
  if (type == KILN_TYPE_Q3_0) {
    kiln_quantize_row_q3_0(src, out, n);
    return KILN_STATUS_OK;
  }
  switch ((kiln_ggml_type_t)type) {
  case KILN_GGML_TYPE_F32: memcpy(out, src, (size_t)n * sizeof(float)); break;
  case KILN_GGML_TYPE_F16:
    for (uint64_t i = 0; i < n; ++i) {
      const uint16_t h = kiln_fp32_to_fp16(src[i]);
      out[2 * i] = (uint8_t)(h & 0xff);
      out[2 * i + 1] = (uint8_t)(h >> 8);
    }
    break;
  case KILN_GGML_TYPE_Q8_0: quantize_q8_0(src, out, n); break;
  case KILN_GGML_TYPE_Q4_0: quantize_q4_0(src, out, n); break;
  case KILN_GGML_TYPE_Q4_K: kiln_quantize_row_q4_K(src, out, n); break;
  case KILN_GGML_TYPE_Q5_K: kiln_quantize_row_q5_K(src, out, n); break;
  case KILN_GGML_TYPE_Q6_K: kiln_quantize_row_q6_K(src, out, n); break;
  default: quantize_q4_1(src, out, n); break;
  }
  return KILN_STATUS_OK;
}
