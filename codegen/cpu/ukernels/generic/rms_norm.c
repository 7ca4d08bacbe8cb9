/* kiln micro-kernels, portable C: RMS normalisation.
 *
 * The same operations as the reference (compiler/eval/OpKernels.cpp rmsNorm, after ggml):
 * squares in float, summed in double in order, mean rounded to float, then
 * (x * (1 / sqrt(mean + eps))) * w. The double sum stays sequential so results match the
 * reference; it is a small share of a layer's time. out may alias x.
 */
#include "common.h"
#include "ukernel_abi.h"

/* The scale's element i, f32 or f16 (norms=f16 halves the bytes, the math stays f32). */
KILN_UK_INLINE float kiln_uk_norm_w(uint32_t format, const uint8_t *w, int32_t i) {
  if (format == KILN_GGML_TYPE_F16)
    return kiln_uk_fp16_to_fp32(((const kiln_uk_uu16_t *)w)[i]);
  return ((const kiln_uk_uf32_t *)w)[i];
}

void kiln_uk_rms_norm(uint32_t format, const float *x, const uint8_t *w, int32_t n,
                      int32_t dim, float eps, float *out) {
  for (int32_t t = 0; t < n; ++t) {
    const float *xt = x + (int64_t)t * dim;
    float *ot = out + (int64_t)t * dim;
    double sum = 0.0;
    for (int32_t i = 0; i < dim; ++i) {
      const float sq = xt[i] * xt[i];
      sum += (double)sq;
    }
    const float mean = (float)(sum / (double)dim);
    const float scale = 1.0f / __builtin_sqrtf(mean + eps);
    if (!w) { /* kiln.rms_normalize: the scale lives in the next linear's weight */
      for (int32_t i = 0; i < dim; ++i)
        ot[i] = xt[i] * scale;
      continue;
    }
    for (int32_t i = 0; i < dim; ++i)
      ot[i] = (xt[i] * scale) * kiln_uk_norm_w(format, w, i);
  }
}
