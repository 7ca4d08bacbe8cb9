/* kiln micro-kernels, portable C: elementwise silu, mul and add (out may alias an input),
 * and the in-place row bias of a linear.
 *
 * silu(x) = x / (1 + e^-x) as the reference executor computes it, with kiln_uk_expf
 * (branch-free, so the loop vectorises). Large negative x gives -0, large positive x.
 */
#include "common.h"
#include "ukernel_abi.h"

void kiln_uk_silu(const float *x, int64_t count, float *out) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    out[i] = v / (1.0f + kiln_uk_expf(-v));
  }
}

void kiln_uk_mul(const float *a, const float *b, int64_t count, float *out) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = a[i] * b[i];
}

void kiln_uk_add(const float *a, const float *b, int64_t count, float *out) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = a[i] + b[i];
}

void kiln_uk_add_bias(float *y, const float *bias, int32_t n, int32_t width) {
  for (int32_t t = 0; t < n; ++t) {
    float *row = y + (int64_t)t * width;
    for (int32_t i = 0; i < width; ++i)
      row[i] += bias[i];
  }
}
