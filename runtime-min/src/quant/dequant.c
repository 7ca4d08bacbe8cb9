/* kiln runtime-min: GGUF type table, half/bfloat16 conversion, kiln_dequantize dispatch
 * and the float and 32-element block formats (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0,
 * and kiln's own q3_0).
 *
 * Every decoder is bit-exact with ggml's `dequantize_row_*` (ggml/src/ggml-quants.c): the
 * same float (never double) operations in the same order. FMA contraction of `x*d + m`
 * cannot change a bit: an fp16 scale (11 significant bits) times a quant of <= 8 bits is
 * exact in float, so only the add rounds. Blocks are memcpy'd into their struct because
 * tensor data in a GGUF file need not be aligned. Host byte order is assumed
 * little-endian, as GGUF is.
 */
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_blocks.h"
#include "quant_args.h"

typedef struct kiln_type_info_s {
  uint32_t type;
  const char *name;
  uint32_t block_elems;
  uint32_t block_bytes;
} kiln_type_info_t;

static const kiln_type_info_t kTypes[] = {
    {KILN_GGML_TYPE_F32, "f32", 1, 4},
    {KILN_GGML_TYPE_F16, "f16", 1, 2},
    {KILN_GGML_TYPE_Q4_0, "q4_0", QK4_0, sizeof(kiln_block_q4_0_t)},
    {KILN_GGML_TYPE_Q4_1, "q4_1", QK4_1, sizeof(kiln_block_q4_1_t)},
    {KILN_GGML_TYPE_Q5_0, "q5_0", QK5_0, sizeof(kiln_block_q5_0_t)},
    {KILN_GGML_TYPE_Q5_1, "q5_1", QK5_1, sizeof(kiln_block_q5_1_t)},
    {KILN_GGML_TYPE_Q8_0, "q8_0", QK8_0, sizeof(kiln_block_q8_0_t)},
    {KILN_GGML_TYPE_Q2_K, "q2_K", QK_K, sizeof(kiln_block_q2_K_t)},
    {KILN_GGML_TYPE_Q3_K, "q3_K", QK_K, sizeof(kiln_block_q3_K_t)},
    {KILN_GGML_TYPE_Q4_K, "q4_K", QK_K, sizeof(kiln_block_q4_K_t)},
    {KILN_GGML_TYPE_Q5_K, "q5_K", QK_K, sizeof(kiln_block_q5_K_t)},
    {KILN_GGML_TYPE_Q6_K, "q6_K", QK_K, sizeof(kiln_block_q6_K_t)},
    {KILN_GGML_TYPE_IQ4_NL, "iq4_nl", QK4_NL, sizeof(kiln_block_iq4_nl_t)},
    {KILN_GGML_TYPE_IQ4_XS, "iq4_xs", QK_K, sizeof(kiln_block_iq4_xs_t)},
    {KILN_GGML_TYPE_BF16, "bf16", 1, 2},
    {KILN_TYPE_Q3_0, "q3_0", QK3_0, sizeof(kiln_block_q3_0_t)},
};

static const kiln_type_info_t *kiln_type_info(uint32_t type) {
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); ++i)
    if (kTypes[i].type == type)
      return &kTypes[i];
  return NULL;
}

const char *kiln_ggml_type_name(uint32_t type) {
  const kiln_type_info_t *info = kiln_type_info(type);
  return info ? info->name : NULL;
}

size_t kiln_ggml_block_elems(uint32_t type) {
  const kiln_type_info_t *info = kiln_type_info(type);
  return info ? info->block_elems : 0;
}

size_t kiln_ggml_block_bytes(uint32_t type) {
  const kiln_type_info_t *info = kiln_type_info(type);
  return info ? info->block_bytes : 0;
}

kiln_status_t kiln_ggml_row_bytes(uint32_t type, uint64_t n, uint64_t *out_bytes) {
  const kiln_type_info_t *info = kiln_type_info(type);
  if (!out_bytes)
    return KILN_STATUS_INVALID_ARGUMENT;
  *out_bytes = 0;
  if (!info)
    return KILN_STATUS_UNSUPPORTED;
  if (n % info->block_elems != 0)
    return KILN_STATUS_INVALID_ARGUMENT;
  const uint64_t blocks = n / info->block_elems;
  if (blocks > UINT64_MAX / info->block_bytes)
    return KILN_STATUS_OUT_OF_RANGE;
  *out_bytes = blocks * info->block_bytes;
  return KILN_STATUS_OK;
}

static float kiln_f32_from_bits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Pure integer conversion, so the result does not depend on F16C or the FPU. NaNs come out
 * quiet with their payload kept, as ggml's conversion (a float multiply, or vcvtph2ps)
 * gives them. */
float kiln_fp16_to_fp32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) /* inf / nan */
    return kiln_f32_from_bits(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0));
  if (exp != 0) /* normal: rebias 15 -> 127 */
    return kiln_f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0)
    return kiln_f32_from_bits(sign);
  /* subnormal half (mant * 2^-24) is a normal float: shift the leading 1 into bit 10 */
  uint32_t e = 113;
  while (!(mant & 0x400u)) {
    mant <<= 1;
    --e;
  }
  return kiln_f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

float kiln_bf16_to_fp32(uint16_t h) { return kiln_f32_from_bits((uint32_t)h << 16); }

static uint16_t kiln_load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t kiln_load_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void dequant_f32(const uint8_t *src, float *y, uint64_t n) {
  memcpy(y, src, (size_t)n * sizeof(float));
}

static void dequant_f16(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    y[i] = kiln_fp16_to_fp32(kiln_load_u16(src + 2 * i));
}

static void dequant_bf16(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    y[i] = kiln_bf16_to_fp32(kiln_load_u16(src + 2 * i));
}

static void dequant_q4_0(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n / QK4_0; ++i, y += QK4_0) {
    kiln_block_q4_0_t b;
    memcpy(&b, src + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      const int x0 = (b.qs[j] & 0x0f) - 8;
      const int x1 = (b.qs[j] >> 4) - 8;
      y[j] = x0 * d;
      y[j + QK4_0 / 2] = x1 * d;
    }
  }
}

static void dequant_q4_1(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n / QK4_1; ++i, y += QK4_1) {
    kiln_block_q4_1_t b;
    memcpy(&b, src + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const float m = kiln_fp16_to_fp32(b.m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const int x0 = b.qs[j] & 0x0f;
      const int x1 = b.qs[j] >> 4;
      y[j] = x0 * d + m;
      y[j + QK4_1 / 2] = x1 * d + m;
    }
  }
}

static void dequant_q5_0(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n / QK5_0; ++i, y += QK5_0) {
    kiln_block_q5_0_t b;
    memcpy(&b, src + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const uint32_t qh = kiln_load_u32(b.qh);
    for (int j = 0; j < QK5_0 / 2; ++j) {
      /* bit j of qh is the 5th bit of value j, bit j+16 that of value j+16 */
      const uint8_t xh0 = (uint8_t)(((qh >> j) << 4) & 0x10);
      const uint8_t xh1 = (uint8_t)((qh >> (j + 12)) & 0x10);
      const int x0 = ((b.qs[j] & 0x0f) | xh0) - 16;
      const int x1 = ((b.qs[j] >> 4) | xh1) - 16;
      y[j] = x0 * d;
      y[j + QK5_0 / 2] = x1 * d;
    }
  }
}

static void dequant_q5_1(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n / QK5_1; ++i, y += QK5_1) {
    kiln_block_q5_1_t b;
    memcpy(&b, src + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const float m = kiln_fp16_to_fp32(b.m);
    const uint32_t qh = kiln_load_u32(b.qh);
    for (int j = 0; j < QK5_1 / 2; ++j) {
      const uint8_t xh0 = (uint8_t)(((qh >> j) << 4) & 0x10);
      const uint8_t xh1 = (uint8_t)((qh >> (j + 12)) & 0x10);
      const int x0 = (b.qs[j] & 0x0f) | xh0;
      const int x1 = (b.qs[j] >> 4) | xh1;
      y[j] = x0 * d + m;
      y[j + QK5_1 / 2] = x1 * d + m;
    }
  }
}

static void dequant_q8_0(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n / QK8_0; ++i, y += QK8_0) {
    kiln_block_q8_0_t b;
    memcpy(&b, src + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    for (int j = 0; j < QK8_0; ++j)
      y[j] = b.qs[j] * d;
  }
}

/* kiln's own format: (q - 4) * d is exact in float (an 11-bit scale times a 3-bit int). */
static void dequant_q3_0(const uint8_t *src, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n / QK3_0; ++i, y += QK3_0) {
    kiln_block_q3_0_t b;
    memcpy(&b, src + i * sizeof b, sizeof b);
    const float d = kiln_fp16_to_fp32(b.d);
    const uint32_t qh = kiln_load_u32(b.qh);
    for (int j = 0; j < QK3_0; ++j) {
      const int q = ((b.qs[j % 8] >> (2 * (j / 8))) & 3) | (int)(((qh >> j) & 1u) << 2);
      y[j] = (q - 4) * d;
    }
  }
}

kiln_status_t kiln_dequantize(uint32_t type, const void *src, float *dst, uint64_t n) {
  int empty;
  KILN_RETURN_IF_ERROR(kiln_quant_check_args(type, src, dst, n, &empty));
  if (empty)
    return KILN_STATUS_OK;
  const uint8_t *p = (const uint8_t *)src;
  if (type == KILN_TYPE_Q3_0) { /* not a kiln_ggml_type_t: outside the switch */
    dequant_q3_0(p, dst, n);
    return KILN_STATUS_OK;
  }
  switch ((kiln_ggml_type_t)type) {
  case KILN_GGML_TYPE_F32: dequant_f32(p, dst, n); break;
  case KILN_GGML_TYPE_F16: dequant_f16(p, dst, n); break;
  case KILN_GGML_TYPE_BF16: dequant_bf16(p, dst, n); break;
  case KILN_GGML_TYPE_Q4_0: dequant_q4_0(p, dst, n); break;
  case KILN_GGML_TYPE_Q4_1: dequant_q4_1(p, dst, n); break;
  case KILN_GGML_TYPE_Q5_0: dequant_q5_0(p, dst, n); break;
  case KILN_GGML_TYPE_Q5_1: dequant_q5_1(p, dst, n); break;
  case KILN_GGML_TYPE_Q8_0: dequant_q8_0(p, dst, n); break;
  case KILN_GGML_TYPE_Q2_K: kiln_dequantize_row_q2_K(p, dst, n); break;
  case KILN_GGML_TYPE_Q3_K: kiln_dequantize_row_q3_K(p, dst, n); break;
  case KILN_GGML_TYPE_Q4_K: kiln_dequantize_row_q4_K(p, dst, n); break;
  case KILN_GGML_TYPE_Q5_K: kiln_dequantize_row_q5_K(p, dst, n); break;
  case KILN_GGML_TYPE_Q6_K: kiln_dequantize_row_q6_K(p, dst, n); break;
  case KILN_GGML_TYPE_IQ4_NL: kiln_dequantize_row_iq4_nl(p, dst, n); break;
  case KILN_GGML_TYPE_IQ4_XS: kiln_dequantize_row_iq4_xs(p, dst, n); break;
  default: return KILN_STATUS_UNSUPPORTED; /* in the table but not decoded: a bug */
  }
  return KILN_STATUS_OK;
}
