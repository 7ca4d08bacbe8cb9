/* kiln runtime-min: q4_K_r16, q5_K_r16 and q6_K_r16 (layout in kiln/quant_packed.h). Moves
 * bits only: a row unpacks to the ggml super-blocks it was packed from, byte for byte. */
#include <string.h>

#include "kiln/quant_blocks.h"
#include "kiln/quant_packed.h"
#include "kquant_scales.h"
#include "packed_kquant.h"

/* Element e's code of a sub-block: its byte and nibble in the q4 chunks (see the layout). */
static uint64_t chunk_byte(uint64_t lane, int e) {
  return (uint64_t)(e % 16 / 4) * 64u + lane * 4u + (uint64_t)(e % 4);
}

/* ggml q4_K / q5_K (the same header): sub-block j is the low (even j) or high nibbles of
 * qs[32(j/2) + l]; q5_K's fifth bit is bit j of qh[l]. `qh` is NULL for q4_K. */
static void pack_q45_k(const kiln_half_t *dm, const uint8_t *scales, const uint8_t *qs,
                       const uint8_t *qh, uint8_t *sb, uint64_t lane) {
  memcpy(sb + lane * 2u, &dm[0], 2);
  memcpy(sb + 32u + lane * 2u, &dm[1], 2);
  const uint64_t sub = qh ? KILN_Q5_K_R16_SUB_BYTES : 256u;
  uint32_t high = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    kiln_kquant_scale_min(scales, j, &sc, &m);
    sb[64u + (uint64_t)j * 16u + lane] = (uint8_t)((sc & 15) | (m & 15) << 4);
    high |= (uint32_t)((sc >> 4) | (m >> 4) << 2) << (4 * j);
    uint8_t *codes = sb + KILN_Q4_K_R16_CODES + (uint64_t)j * sub;
    for (int e = 0; e < 32; ++e) {
      const uint8_t q = qs[32 * (j / 2) + e];
      const uint8_t c = (uint8_t)((j & 1) ? q >> 4 : q & 15);
      codes[chunk_byte(lane, e)] |= (uint8_t)(e < 16 ? c : c << 4);
      if (qh)
        codes[256u + lane * 4u + (uint64_t)(e % 4)] |=
            (uint8_t)(((qh[e] >> j) & 1) << (e % 16 / 4 + (e < 16 ? 0 : 4)));
    }
  }
  for (int i = 0; i < 4; ++i)
    sb[192u + lane * 4u + (uint64_t)i] = (uint8_t)(high >> (8 * i));
}

static void unpack_q45_k(const uint8_t *sb, uint64_t lane, kiln_half_t *dm, uint8_t *scales,
                         uint8_t *qs, uint8_t *qh) {
  memcpy(&dm[0], sb + lane * 2u, 2);
  memcpy(&dm[1], sb + 32u + lane * 2u, 2);
  const uint64_t sub = qh ? KILN_Q5_K_R16_SUB_BYTES : 256u;
  uint32_t high = 0;
  for (int i = 0; i < 4; ++i)
    high |= (uint32_t)sb[192u + lane * 4u + (uint64_t)i] << (8 * i);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    const uint8_t lo = sb[64u + (uint64_t)j * 16u + lane];
    const uint32_t hi = high >> (4 * j);
    sc[j] = (uint8_t)((lo & 15) | (hi & 3) << 4);
    m[j] = (uint8_t)((lo >> 4) | ((hi >> 2) & 3) << 4);
    const uint8_t *codes = sb + KILN_Q4_K_R16_CODES + (uint64_t)j * sub;
    for (int e = 0; e < 32; ++e) {
      const uint8_t byte = codes[chunk_byte(lane, e)];
      const uint8_t c = (uint8_t)(e < 16 ? byte & 15 : byte >> 4);
      qs[32 * (j / 2) + e] |= (uint8_t)((j & 1) ? c << 4 : c);
      if (qh) {
        const uint8_t bits = codes[256u + lane * 4u + (uint64_t)(e % 4)];
        qh[e] |= (uint8_t)(((bits >> (e % 16 / 4 + (e < 16 ? 0 : 4))) & 1) << j);
      }
    }
  }
  /* ggml's 12-byte packing (kquant_scales.h read backwards) */
  for (int j = 0; j < 4; ++j) {
    scales[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
    scales[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
    scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
  }
}

/* ggml q6_K: sub-block j = 4h + k takes ql[64h + 32(k&1) + l]'s low (k < 2) or high nibble
 * and bits 2k of qh[32h + l] (the decoder in codegen/cpu/ukernels/common.h). */
static void q6_code_bits(const kiln_block_q6_K_t *b, int j, int l, uint8_t *lo, uint8_t *hi) {
  const int h = j / 4, k = j % 4;
  const uint8_t ql = b->ql[64 * h + 32 * (k & 1) + l];
  *lo = (uint8_t)(k < 2 ? ql & 15 : ql >> 4);
  *hi = (uint8_t)((b->qh[32 * h + l] >> (2 * k)) & 3);
}

static void pack_q6_k(const kiln_block_q6_K_t *b, uint8_t *d, uint8_t *sb, uint64_t lane) {
  memcpy(d + lane * 2u, &b->d, 2);
  for (int j = 0; j < 8; ++j) {
    sb[(uint64_t)j * 32u + lane] = (uint8_t)b->scales[2 * j];
    sb[(uint64_t)j * 32u + 16u + lane] = (uint8_t)b->scales[2 * j + 1];
    uint8_t *codes = sb + KILN_Q6_K_R16_CODES + (uint64_t)j * KILN_Q6_K_R16_SUB_BYTES;
    for (int e = 0; e < 32; ++e) {
      uint8_t lo, hi;
      q6_code_bits(b, j, e, &lo, &hi);
      const uint64_t at = chunk_byte(lane, e);
      codes[at] |= (uint8_t)(e < 16 ? lo : lo << 4);
      codes[256u + (e < 16 ? 0u : 64u) + lane * 4u + (uint64_t)(e % 4)] |=
          (uint8_t)(hi << (2 * (e % 16 / 4)));
    }
  }
}

static void unpack_q6_k(const uint8_t *d, const uint8_t *sb, uint64_t lane,
                        kiln_block_q6_K_t *b) {
  memset(b, 0, sizeof *b);
  memcpy(&b->d, d + lane * 2u, 2);
  for (int j = 0; j < 8; ++j) {
    b->scales[2 * j] = (int8_t)sb[(uint64_t)j * 32u + lane];
    b->scales[2 * j + 1] = (int8_t)sb[(uint64_t)j * 32u + 16u + lane];
    const uint8_t *codes = sb + KILN_Q6_K_R16_CODES + (uint64_t)j * KILN_Q6_K_R16_SUB_BYTES;
    const int h = j / 4, k = j % 4;
    for (int e = 0; e < 32; ++e) {
      const uint8_t byte = codes[chunk_byte(lane, e)];
      const uint8_t lo = (uint8_t)(e < 16 ? byte & 15 : byte >> 4);
      const uint8_t hi = (uint8_t)((codes[256u + (e < 16 ? 0u : 64u) + lane * 4u +
                                          (uint64_t)(e % 4)] >>
                                    (2 * (e % 16 / 4))) &
                                   3);
      b->ql[64 * h + 32 * (k & 1) + e] |= (uint8_t)(k < 2 ? lo : lo << 4);
      b->qh[32 * h + e] |= (uint8_t)(hi << (2 * k));
    }
  }
}

void kiln_packed_kquant_put_row(uint32_t type, const void *src, uint64_t lane,
                                uint64_t row_length, uint8_t *group) {
  const uint64_t ns = row_length / KILN_PACK_SUPER;
  for (uint64_t s = 0; s < ns; ++s) {
    uint8_t *sb = group + kiln_packed_super_offset(type, s);
    if (type == KILN_TYPE_Q4_K_R16) {
      kiln_block_q4_K_t b;
      memcpy(&b, (const uint8_t *)src + s * sizeof b, sizeof b);
      const kiln_half_t dm[2] = {b.d, b.dmin};
      pack_q45_k(dm, b.scales, b.qs, NULL, sb, lane);
    } else if (type == KILN_TYPE_Q5_K_R16) {
      kiln_block_q5_K_t b;
      memcpy(&b, (const uint8_t *)src + s * sizeof b, sizeof b);
      const kiln_half_t dm[2] = {b.d, b.dmin};
      pack_q45_k(dm, b.scales, b.qs, b.qh, sb, lane);
    } else {
      kiln_block_q6_K_t b;
      memcpy(&b, (const uint8_t *)src + s * sizeof b, sizeof b);
      pack_q6_k(&b, group + kiln_packed_q6_k_d_offset(s), sb, lane);
    }
  }
}

void kiln_packed_kquant_get_super(uint32_t type, const uint8_t *group, uint64_t lane,
                                  uint64_t s, void *dst) {
  const uint8_t *sb = group + kiln_packed_super_offset(type, s);
  if (type == KILN_TYPE_Q4_K_R16) {
    kiln_block_q4_K_t b;
    memset(&b, 0, sizeof b);
    kiln_half_t dm[2];
    unpack_q45_k(sb, lane, dm, b.scales, b.qs, NULL);
    b.d = dm[0];
    b.dmin = dm[1];
    memcpy(dst, &b, sizeof b);
  } else if (type == KILN_TYPE_Q5_K_R16) {
    kiln_block_q5_K_t b;
    memset(&b, 0, sizeof b);
    kiln_half_t dm[2];
    unpack_q45_k(sb, lane, dm, b.scales, b.qs, b.qh);
    b.d = dm[0];
    b.dmin = dm[1];
    memcpy(dst, &b, sizeof b);
  } else {
    kiln_block_q6_K_t b;
    unpack_q6_k(group + kiln_packed_q6_k_d_offset(s), sb, lane, &b);
    memcpy(dst, &b, sizeof b);
  }
}
