/* kiln micro-kernels, portable C: elementwise silu, mul and add (out may alias an input),
 * and the in-place row bias of a linear.
 *
 * silu(x) = x / (1 + e^-x) as the reference executor computes it, with kiln_uk_expf
 * (branch-free, so the loop vectorises). Large negative x gives -0, large positive x.
 */
#include "common.h"
#include "ukernel_abi.h"

KILN_UK_INLINE float silu1(float v) { return v / (1.0f + kiln_uk_expf(-v)); }

/* Hexagon (no float vectors before v68): blocks of 4, read before any is written and
 * unrolled, so that 4 elements' exp chains share packets. out may be x, so without the
 * block a store comes before the next element's load, and the chains run one by one;
 * 4 packed best of 2, 3, 4 and 8 (docs/perf.md, "Hexagon scalar work"). Elsewhere the
 * plain loop, which the compiler vectorises (x86-64-v3: faster than with the blocks). */
#if defined(__hexagon__)
#define SILU_BLOCK 4
#else
#define SILU_BLOCK 1
#endif

void kiln_uk_silu(const float *x, int64_t count, float *out) {
  int64_t i = 0;
  for (; SILU_BLOCK > 1 && i + SILU_BLOCK <= count; i += SILU_BLOCK) {
    float v[SILU_BLOCK];
    KILN_UK_UNROLL
    for (int32_t l = 0; l < SILU_BLOCK; ++l)
      v[l] = x[i + l];
    KILN_UK_UNROLL
    for (int32_t l = 0; l < SILU_BLOCK; ++l)
      out[i + l] = silu1(v[l]);
  }
  for (; i < count; ++i)
    out[i] = silu1(x[i]);
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
