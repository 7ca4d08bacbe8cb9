/* kiln: GGUF/ggml quantized block layouts, shared by compiler, runtime and kernels.
 *
 * One plain struct per format, byte-for-byte ggml's (`src/ggml-common.h`), with its block
 * size and a static_assert on sizeof. Multi-byte fields are little-endian IEEE half
 * (kiln_half_t); tensor data need not be 2-byte aligned, so decoders memcpy a block into
 * one of these structs rather than casting a pointer into the file.
 */
#ifndef KILN_QUANT_BLOCKS_H_
#define KILN_QUANT_BLOCKS_H_

#include <stdint.h>

#ifndef KILN_STATIC_ASSERT
#ifdef __cplusplus
#define KILN_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define KILN_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#endif

typedef uint16_t kiln_half_t; /* IEEE binary16 bits */

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK3_0 32 /* kiln's own (KILN_TYPE_Q3_0), not a ggml format */
#define QK4_NL 32
#define QK_K 256        /* k-quant and iq4_xs super-block */
#define K_SCALE_SIZE 12 /* packed 6-bit scales/mins of q3_K..q5_K */

typedef struct kiln_block_q4_0_s {
  kiln_half_t d;
  uint8_t qs[QK4_0 / 2]; /* nibbles: low = first half, high = second half */
} kiln_block_q4_0_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q4_0_t) == 2 + QK4_0 / 2, "q4_0 block size");

typedef struct kiln_block_q4_1_s {
  kiln_half_t d;
  kiln_half_t m;
  uint8_t qs[QK4_1 / 2];
} kiln_block_q4_1_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q4_1_t) == 4 + QK4_1 / 2, "q4_1 block size");

typedef struct kiln_block_q5_0_s {
  kiln_half_t d;
  uint8_t qh[4]; /* 5th bits, little-endian uint32 */
  uint8_t qs[QK5_0 / 2];
} kiln_block_q5_0_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q5_0_t) == 2 + 4 + QK5_0 / 2, "q5_0 block size");

typedef struct kiln_block_q5_1_s {
  kiln_half_t d;
  kiln_half_t m;
  uint8_t qh[4];
  uint8_t qs[QK5_1 / 2];
} kiln_block_q5_1_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q5_1_t) == 4 + 4 + QK5_1 / 2, "q5_1 block size");

/* kiln's q3_0 (id 1100, no ggml counterpart): element j is d * (q_j - 4), q_j in 0..7.
 * Low 2 bits of q_j in bits 2*(j / 8) .. 2*(j / 8) + 1 of qs[j % 8] (so bytes 0..7 hold
 * elements k, k+8, k+16, k+24); the high bit is bit j of qh read as a little-endian
 * uint32, as q5_0's fifth bit. 14 bytes per 32 weights: 3.5 bits per weight. */
typedef struct kiln_block_q3_0_s {
  kiln_half_t d;
  uint8_t qs[QK3_0 / 4];
  uint8_t qh[QK3_0 / 8];
} kiln_block_q3_0_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q3_0_t) == 2 + QK3_0 / 4 + QK3_0 / 8, "q3_0 block size");

/* Writes codes q[0..31] (each 0..7) and scale d into *b in the layout above: the one
 * packing of q3_0, shared by runtime-min's encoder and the compiler's calibrated one. */
static inline void kiln_pack_q3_0(kiln_block_q3_0_t *b, kiln_half_t d, const uint8_t *q) {
  uint32_t qh = 0;
  b->d = d;
  for (int i = 0; i < QK3_0 / 4; ++i)
    b->qs[i] = 0;
  for (int j = 0; j < QK3_0; ++j) {
    b->qs[j % 8] = (uint8_t)(b->qs[j % 8] | (q[j] & 3) << (2 * (j / 8)));
    qh |= (uint32_t)(q[j] >> 2) << j;
  }
  for (int i = 0; i < QK3_0 / 8; ++i)
    b->qh[i] = (uint8_t)(qh >> (8 * i)); /* little-endian, as the decoder reads it */
}

typedef struct kiln_block_q8_0_s {
  kiln_half_t d;
  int8_t qs[QK8_0];
} kiln_block_q8_0_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q8_0_t) == 2 + QK8_0, "q8_0 block size");

typedef struct kiln_block_q2_K_s {
  uint8_t scales[QK_K / 16]; /* 4-bit scale (low) and min (high) per 16 values */
  uint8_t qs[QK_K / 4];
  kiln_half_t d;
  kiln_half_t dmin;
} kiln_block_q2_K_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q2_K_t) == 4 + QK_K / 16 + QK_K / 4, "q2_K block size");

typedef struct kiln_block_q3_K_s {
  uint8_t hmask[QK_K / 8]; /* high (3rd) bit of each quant */
  uint8_t qs[QK_K / 4];    /* low 2 bits */
  uint8_t scales[K_SCALE_SIZE]; /* 16 6-bit scales */
  kiln_half_t d;
} kiln_block_q3_K_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q3_K_t) == 2 + QK_K / 8 + QK_K / 4 + K_SCALE_SIZE,
                   "q3_K block size");

typedef struct kiln_block_q4_K_s {
  kiln_half_t d;
  kiln_half_t dmin;
  uint8_t scales[K_SCALE_SIZE]; /* 8 6-bit scales and 8 6-bit mins */
  uint8_t qs[QK_K / 2];
} kiln_block_q4_K_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q4_K_t) == 4 + K_SCALE_SIZE + QK_K / 2, "q4_K block size");

typedef struct kiln_block_q5_K_s {
  kiln_half_t d;
  kiln_half_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
} kiln_block_q5_K_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q5_K_t) == 4 + K_SCALE_SIZE + QK_K / 8 + QK_K / 2,
                   "q5_K block size");

typedef struct kiln_block_q6_K_s {
  uint8_t ql[QK_K / 2]; /* low 4 bits */
  uint8_t qh[QK_K / 4]; /* high 2 bits */
  int8_t scales[QK_K / 16];
  kiln_half_t d;
} kiln_block_q6_K_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_q6_K_t) == 2 + QK_K / 16 + 3 * QK_K / 4, "q6_K block size");

typedef struct kiln_block_iq4_nl_s {
  kiln_half_t d;
  uint8_t qs[QK4_NL / 2]; /* indices into the non-linear kvalues table */
} kiln_block_iq4_nl_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_iq4_nl_t) == 2 + QK4_NL / 2, "iq4_nl block size");

typedef struct kiln_block_iq4_xs_s {
  kiln_half_t d;
  uint16_t scales_h; /* high 2 bits of 8 6-bit scales */
  uint8_t scales_l[QK_K / 64];
  uint8_t qs[QK_K / 2];
} kiln_block_iq4_xs_t;
KILN_STATIC_ASSERT(sizeof(kiln_block_iq4_xs_t) == 4 + QK_K / 64 + QK_K / 2, "iq4_xs block size");

#endif /* KILN_QUANT_BLOCKS_H_ */
