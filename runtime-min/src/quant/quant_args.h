/* Argument checks shared by kiln_dequantize and kiln_quantize: n a multiple of the
 * format's block, non-NULL buffers, and both buffers addressable on this host. */
#ifndef KILN_SRC_QUANT_QUANT_ARGS_H_
#define KILN_SRC_QUANT_QUANT_ARGS_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/quant.h"

/* OK with *out_empty = 1 when there is nothing to do (n == 0). */
static inline kiln_status_t kiln_quant_check_args(uint32_t type, const void *a, const void *b,
                                                  uint64_t n, int *out_empty) {
  uint64_t bytes = 0;
  *out_empty = 0;
  KILN_RETURN_IF_ERROR(kiln_ggml_row_bytes(type, n, &bytes));
  if (n == 0) {
    *out_empty = 1;
    return KILN_STATUS_OK;
  }
  if (!a || !b)
    return KILN_STATUS_INVALID_ARGUMENT;
#if UINT64_MAX > SIZE_MAX
  if (bytes > SIZE_MAX || n > SIZE_MAX / sizeof(float))
    return KILN_STATUS_OUT_OF_RANGE;
#endif
  return KILN_STATUS_OK;
}

#endif /* KILN_SRC_QUANT_QUANT_ARGS_H_ */
