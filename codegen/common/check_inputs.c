/* The generated entry point's input check, linked with the micro-kernels: token ids and
 * positions are validated once so no kernel ever indexes out of range. */
#include <stdint.h>

int32_t kiln_uk_check_inputs(const int32_t *tokens, const int32_t *positions, int32_t n,
                             int32_t vocab, int32_t max_ctx, int32_t max_batch) {
  if (n < 1 || n > max_batch)
    return -1;
  for (int32_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return -2;
    if (positions[i] < 0 || positions[i] >= max_ctx)
      return -3;
  }
  return 0;
}
