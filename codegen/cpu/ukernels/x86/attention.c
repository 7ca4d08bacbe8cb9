/* kiln micro-kernels, x86 (AVX2 + FMA + F16C): attention's row operations over the KV
 * cache in 8-float vectors. Decode at long context reads the whole cache once per token
 * and head, so these loops are the kernel; the generic C converts f16 and int8 one
 * element at a time (stories260K at 1920 positions decoded 2.6x slower with a k=int8,v=f16
 * cache than with f32 before this file). f16 rows load through vcvtph2ps, int8 rows through
 * vpmovsxbd + vcvtdq2ps. Results equal the generic kernel's up to summation order. Storing
 * (rounding to f16/int8, RoPE) and the softmax are the generic code, included below.
 */
#include <immintrin.h>

#include "common.h"

#define KILN_UK_ATTENTION_ROW_OPS 1

KILN_UK_INLINE float hsum8(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

KILN_UK_INLINE __m256 load_f16x8(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

KILN_UK_INLINE __m256 load_i8x8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

KILN_UK_INLINE float dot_f32(const float *a, const float *b, int32_t d) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float r = hsum8(acc);
  for (; i < d; ++i)
    r += a[i] * b[i];
  return r;
}

KILN_UK_INLINE float dot_f16(const float *a, const uint16_t *b, int32_t d) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load_f16x8(b + i), acc);
  float r = hsum8(acc);
  for (; i < d; ++i)
    r += a[i] * kiln_uk_fp16_to_fp32(b[i]);
  return r;
}

KILN_UK_INLINE float dot_i8(const float *a, const int8_t *b, int32_t d) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load_i8x8(b + i), acc);
  float r = hsum8(acc);
  for (; i < d; ++i)
    r += a[i] * (float)b[i];
  return r;
}

KILN_UK_INLINE void axpy_f32(float p, const float *v, float *o, int32_t d) {
  const __m256 pv = _mm256_set1_ps(p);
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    _mm256_storeu_ps(o + i, _mm256_fmadd_ps(pv, _mm256_loadu_ps(v + i), _mm256_loadu_ps(o + i)));
  for (; i < d; ++i)
    o[i] += p * v[i];
}

KILN_UK_INLINE void axpy_f16(float p, const uint16_t *v, float *o, int32_t d) {
  const __m256 pv = _mm256_set1_ps(p);
  int32_t i = 0;
  for (; i + 8 <= d; i += 8)
    _mm256_storeu_ps(o + i, _mm256_fmadd_ps(pv, load_f16x8(v + i), _mm256_loadu_ps(o + i)));
  for (; i < d; ++i)
    o[i] += p * kiln_uk_fp16_to_fp32(v[i]);
}

#include "generic/attention.c"
