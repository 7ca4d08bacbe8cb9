/* kiln micro-kernels, portable C: rotary position embedding from precomputed tables.
 *
 * The reference math (compiler/eval/OpKernels.cpp applyRope): for pair i of every head,
 * (x0, x1) -> (x0 c - x1 s, x0 s + x1 c) with c, s the cos/sin of the pair's angle at the
 * token's position. Pairs are (2i, 2i+1), or (i, i + rotary_dims/2) with rotate_half;
 * elements past rotary_dims in each head are left as they are. In place.
 */
#include "common.h"
#include "ukernel_abi.h"

void kiln_uk_rope(float *x, int32_t n, int32_t width, int32_t head_dim, int32_t rotary_dims,
                  int32_t rotate_half, const int32_t *positions, const float *cos_table,
                  const float *sin_table) {
  const int32_t half = rotary_dims / 2;
  const int32_t heads = width / head_dim;
  /* pair i is (i * step_a, i * step_a + off_b) */
  const int32_t step = rotate_half ? 1 : 2;
  const int32_t off = rotate_half ? half : 1;
  for (int32_t t = 0; t < n; ++t) {
    const float *c = cos_table + (int64_t)positions[t] * half;
    const float *s = sin_table + (int64_t)positions[t] * half;
    for (int32_t h = 0; h < heads; ++h) {
      float *xh = x + (int64_t)t * width + (int64_t)h * head_dim;
      for (int32_t i = 0; i < half; ++i) {
        const float x0 = xh[i * step], x1 = xh[i * step + off];
        xh[i * step] = x0 * c[i] - x1 * s[i];
        xh[i * step + off] = x0 * s[i] + x1 * c[i];
      }
    }
  }
}
