/* kiln runtime-min: one row of a q4_K_r16 / q5_K_r16 / q6_K_r16 group in and out (internal;
 * packed.c walks the rows). */
#ifndef KILN_SRC_QUANT_PACKED_KQUANT_H_
#define KILN_SRC_QUANT_PACKED_KQUANT_H_

#include <stdint.h>

/* ORs row `lane`'s ggml super-blocks (src, row_length / 256 of them) into a zeroed group. */
void kiln_packed_kquant_put_row(uint32_t type, const void *src, uint64_t lane,
                                uint64_t row_length, uint8_t *group);

/* Writes super-block s of row `lane` of a group back as the ggml block it was packed from. */
void kiln_packed_kquant_get_super(uint32_t type, const uint8_t *group, uint64_t lane,
                                  uint64_t s, void *dst);

#endif /* KILN_SRC_QUANT_PACKED_KQUANT_H_ */
