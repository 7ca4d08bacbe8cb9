/* kiln micro-kernels: what every implementation of kiln_uk_linear_packed shares (internal).
 *
 * Activations are quantised on the fly to int8 blocks of 32 with ggml's q8_0 rule
 * (d = amax / 127, q = round(x / d), ties to even), one row per token into qscratch
 * (layout: kiln_packed_act_stride in kiln/quant_packed.h): codes, then per block the
 * scale d (fp32, not rounded to fp16), the code sum s, d * s and -8 * s, which the kernels
 * need for the weights' offsets (q4_0's -8, q8's +128 bias, q4_1's minimum; -8 * s is
 * q4_0's correction ready to load as the start of an integer sum; for q6_K_r16 that last
 * slot holds the sum of the block's first 16 codes instead, for its -32 per 16-element
 * scale). Portable C: it is O(in) per token against O(in * out) for the product, and the same code on every ISA
 * gives the same int8 activations everywhere.
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_PACKED_COMMON_H_
#define KILN_CODEGEN_CPU_UKERNELS_PACKED_COMMON_H_

#include "common.h"
#include "kiln/quant_packed.h"

typedef struct packed_args_s {
  uint32_t format;
  const float *x;
  int32_t n, in, nb; /* nb: blocks of 32 per row */
  const uint8_t *w;
  int64_t group_stride;
  int32_t out_features, groups;
  float *y;
  uint8_t *qx;
  int64_t qx_stride;
  /* the fused store step (kiln_uk_linear_packed_fused); PLAIN: y [n, out_features] */
  kiln_uk_epilogue_t ep;
  int32_t mode;
  int32_t shard_groups; /* groups per prefetched weight shard, 0: none (ukernel_abi.h) */
} packed_args_t;

/* A token's quantised activations. */
typedef struct {
  const int8_t *q;
  const float *d;
  const int32_t *s;
  const float *ds;
  const int32_t *o; /* -8 * s */
} qact_t;

KILN_UK_INLINE qact_t packed_qact(const packed_args_t *a, int32_t t) {
  const uint8_t *p = a->qx + (int64_t)t * a->qx_stride;
  qact_t r;
  r.q = (const int8_t *)p;
  r.d = (const float *)(p + (int64_t)a->nb * KILN_PACK_BLOCK);
  r.s = (const int32_t *)(r.d + a->nb);
  r.ds = (const float *)(r.s + a->nb);
  r.o = (const int32_t *)(r.ds + a->nb);
  return r;
}

/* Quantises x[0, in) into dst (zero codes past in). The product and the rounding are
 * separate statements so clang (contraction within an expression only) never fuses them:
 * a fused x * id + 1.5 * 2^23 would round some codes differently. (GCC contracts across
 * statements; the native test libraries are built with -ffp-contract=off for this.) */
KILN_UK_INLINE void packed_quantize_row(const float *x, int32_t in, int32_t nb, uint8_t *dst,
                                        int32_t half_sums) {
  int8_t *q = (int8_t *)dst;
  float *d = (float *)(dst + (int64_t)nb * KILN_PACK_BLOCK);
  int32_t *s = (int32_t *)(d + nb);
  float *ds = (float *)(s + nb);
  int32_t *o = (int32_t *)(ds + nb);
  for (int32_t b = 0; b < nb; ++b) {
    const int32_t i0 = b * KILN_PACK_BLOCK;
    const int32_t count = KILN_UK_MIN(KILN_PACK_BLOCK, in - i0);
    /* the block read once, before any code is written: an int8 store may alias x, so
     * with x read in the store loop a scalar core (Hexagon) ran the elements one by one */
    float xb[KILN_PACK_BLOCK];
    /* |x| compared as integers (the same order for every non-NaN float): a max the
     * compiler vectorises. The float compare is not associative, so it stayed a chain of
     * 32 scalar maxss per block, in the serial part of every decode linear (docs/perf.md,
     * "Activation quantisation vectorised"). */
    uint32_t abits = 0;
    for (int32_t j = 0; j < count; ++j) {
      xb[j] = x[i0 + j];
      const uint32_t v = kiln_uk_f32_bits(xb[j]) & 0x7fffffffu;
      abits = v > abits ? v : abits;
    }
    const float amax = kiln_uk_f32_from_bits(abits);
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    int32_t sum = 0;
    int32_t j = 0;
    for (; j < count; ++j) {
      const float v = xb[j] * id;
      /* round to nearest even: exact for |v| < 2^22, no libm */
      const float r = (v + 12582912.0f) - 12582912.0f;
      const int32_t qi = (int32_t)r;
      q[i0 + j] = (int8_t)qi;
      sum += qi;
    }
    for (; j < KILN_PACK_BLOCK; ++j) /* a partial last block: zero codes */
      q[i0 + j] = 0;
    d[b] = db;
    s[b] = sum;
    ds[b] = db * (float)sum;
    int32_t half = 0;
    for (int32_t k = 0; half_sums && k < 16; ++k)
      half += q[i0 + k];
    o[b] = half_sums ? half : -8 * sum;
  }
}

static void packed_quantize_task(void *arg, int32_t task, int32_t n_tasks) {
  const packed_args_t *a = (const packed_args_t *)arg;
  int64_t t0, t1;
  kiln_uk_task_range(a->n, task, n_tasks, &t0, &t1);
  for (int64_t t = t0; t < t1; ++t)
    packed_quantize_row(a->x + t * a->in, a->in, a->nb, a->qx + t * a->qx_stride,
                        a->format == KILN_TYPE_Q6_K_R16);
}

/* The integer kernels run about 10x the fp32 kernels' multiply-adds per second, so a
 * thread hand-off pays only from a larger product: 2^22 (a 2048 x 2048 decode step is
 * parallel, stories260K's 64-token prefill, at most 64 x 64 x 512, is not; docs/perf.md,
 * "Parallel thresholds"). */
#define KILN_UK_PACKED_PARALLEL_MIN_WORK ((int64_t)1 << 22)

/* Tasks over row groups once the product is large enough. */
KILN_UK_INLINE int32_t packed_task_count(const kiln_exec_ctx_t *ctx, const packed_args_t *a) {
  const int64_t work = (int64_t)a->n * a->in * a->out_features;
  return kiln_uk_task_count(ctx, work, KILN_UK_PACKED_PARALLEL_MIN_WORK, a->groups,
                            KILN_UK_LINEAR_TASKS_PER_THREAD);
}

/* Fills the arguments and quantises x: serially for a decode step (a few microseconds),
 * split over tokens for a prefill whose product runs in parallel. Returns the task count
 * for the product. */
KILN_UK_INLINE int32_t packed_prepare(const kiln_exec_ctx_t *ctx, packed_args_t *a,
                                      uint32_t format, const float *x, int32_t n, int32_t in,
                                      const uint8_t *w, int64_t group_stride,
                                      int32_t out_features, float *y, uint8_t *qscratch,
                                      int32_t shard_groups) {
  a->format = format;
  a->x = x;
  a->n = n;
  a->in = in;
  a->nb = (in + KILN_PACK_BLOCK - 1) / KILN_PACK_BLOCK;
  a->w = w;
  a->group_stride = group_stride;
  a->out_features = out_features;
  a->groups = (out_features + (int32_t)kiln_packed_rows(format) - 1) /
              (int32_t)kiln_packed_rows(format);
  a->y = y;
  a->qx = qscratch;
  a->qx_stride = (int64_t)kiln_packed_act_stride((uint64_t)in);
  a->mode = KILN_UK_STORE_PLAIN;
  a->shard_groups = shard_groups;
  const int32_t tasks = packed_task_count(ctx, a);
  kiln_uk_parallel(ctx, packed_quantize_task, a, n >= 8 && tasks > 1 ? KILN_UK_MIN(tasks, n) : 1);
  return tasks;
}

/* A tile's `count` results for rows r0.. of token t through the fused store step: the
 * same float operations as kiln_uk_linear_store row by row, as loops the compiler
 * vectorises (kiln_uk_expf is branch-free); one float at a time, with SwiGLU's exp scalar,
 * it slowed prefill (docs/perf.md, "The fused store step as vector loops, not inlined"). Tiles
 * start on an even row and hold an even count except at a ragged end, so SwiGLU's gate row
 * 2j and up row 2j + 1 arrive together; anything else (a tile across two segments, an odd
 * count) goes row by row in increasing order. Not inlined: one copy instead of one per
 * tile shape and format (inlined, the artifact's code nearly tripled), and a call per 16
 * results costs nothing next to the tile. */
__attribute__((noinline, unused)) static void
packed_store_fused(const packed_args_t *a, int64_t t, int64_t r0, const float *v, int32_t count) {
  const kiln_uk_epilogue_t *e = &a->ep;
  if (a->mode == KILN_UK_STORE_RESIDUAL) {
    float *y = e->y[0] + t * e->width[0] + r0;
    const float *res = e->residual + t * e->width[0] + r0;
    for (int32_t j = 0; j < count; ++j)
      y[j] = v[j] + res[j];
    return;
  }
  if (a->mode == KILN_UK_STORE_SWIGLU && (r0 & 1) == 0 && (count & 1) == 0) {
    float *y = e->y[0] + t * e->width[0] + (r0 >> 1);
    for (int32_t j = 0; j < count / 2; ++j) {
      const float g = v[2 * j];
      y[j] = (g / (1.0f + kiln_uk_expf(-g))) * v[2 * j + 1];
    }
    return;
  }
  if (a->mode == KILN_UK_STORE_SEGMENTS) { /* copied piece by piece, segment by segment */
    int64_t r = r0;
    int32_t s = 0;
    while (s < 2 && r >= e->width[s]) {
      r -= e->width[s];
      ++s;
    }
    for (;;) {
      const int32_t piece = (int32_t)KILN_UK_MIN((int64_t)count, e->width[s] - r);
      float *y = e->y[s] + t * e->width[s] + r;
      for (int32_t j = 0; j < piece; ++j)
        y[j] = v[j];
      v += piece;
      count -= piece;
      if (count <= 0 || s == 2)
        return;
      r = 0;
      ++s;
    }
  }
  for (int32_t j = 0; j < count; ++j)
    kiln_uk_linear_store(e, a->mode, t, r0 + j, v[j]);
}

/* A group's `rows` results for rows r0.. of token t (fewer at the matrix's end): y, or the
 * fused store step. */
KILN_UK_INLINE void packed_store_rows(const packed_args_t *a, int64_t t, int64_t r0,
                                      const float *acc, int32_t rows) {
  const int32_t count = (int32_t)KILN_UK_MIN((int64_t)rows, a->out_features - r0);
  if (a->mode == KILN_UK_STORE_PLAIN) {
    float *y = a->y + t * a->out_features + r0;
    for (int32_t r = 0; r < count; ++r)
      y[r] = acc[r];
  } else {
    packed_store_fused(a, t, r0, acc, count);
  }
}

/* kiln_uk_linear_packed_fused's arguments on top of packed_prepare's. */
KILN_UK_INLINE void packed_set_epilogue(packed_args_t *a, float *y0, int32_t w0, float *y1,
                                        int32_t w1, float *y2, int32_t w2,
                                        const float *residual, int32_t swiglu) {
  a->ep.y[0] = y0, a->ep.y[1] = y1, a->ep.y[2] = y2;
  a->ep.width[0] = w0, a->ep.width[1] = w1, a->ep.width[2] = w2;
  a->ep.residual = residual;
  a->ep.swiglu = swiglu;
  a->mode = KILN_UK_STORE_MODE(&a->ep);
}

/* The portable C product, for every packed format (r16 and r32): generic/linear_packed.c
 * runs it for everything, the ISA files for the formats they have no vector path for.
 * Per group, token and block the R integer dot products are exact int32 sums of u8 weight
 * codes times s8 activations, then corrected for the codes' offset (q4_0: -8 * s, q8_0's
 * +128 bias: -128 * s) and scaled in float once: y += isum * (d_w * d_x) (+ m_w * d_x * s
 * for q4_1). `format` is a constant in each caller, so R and the chunk size are too. */
#define PACKED_MAX_ROWS 32

KILN_UK_INLINE void packed_generic_group_token(const packed_args_t *a, uint32_t format,
                                               int64_t g, int32_t t) {
  const int32_t R = (int32_t)kiln_packed_rows(format), chunk = 4 * R;
  const uint32_t base = kiln_packed_base_type(format);
  const uint8_t *grp = a->w + g * a->group_stride;
  const qact_t xq = packed_qact(a, t);
  float acc[PACKED_MAX_ROWS];
  for (int32_t r = 0; r < R; ++r)
    acc[r] = 0.0f;
  for (int32_t b = 0; b < a->nb; ++b) {
    const uint8_t *codes = grp + kiln_packed_codes_offset(format, (uint64_t)b);
    const uint8_t *scales = grp + kiln_packed_scales_offset(format, (uint64_t)b);
    const uint8_t *mins = grp + kiln_packed_mins_offset(format, (uint64_t)b); /* q4_1 */
    const int8_t *xb = xq.q + b * KILN_PACK_BLOCK;
    int32_t isum[PACKED_MAX_ROWS];
    for (int32_t r = 0; r < R; ++r)
      isum[r] = 0;
    if (base == KILN_GGML_TYPE_Q8_0) {
      for (int32_t k = 0; k < 8; ++k)
        for (int32_t r = 0; r < R; ++r)
          for (int32_t j = 0; j < 4; ++j)
            isum[r] += (int32_t)codes[k * chunk + r * 4 + j] * xb[4 * k + j];
    } else {
      for (int32_t k = 0; k < 4; ++k)
        for (int32_t r = 0; r < R; ++r)
          for (int32_t j = 0; j < 4; ++j) {
            const int32_t c = codes[k * chunk + r * 4 + j];
            isum[r] += (c & 15) * xb[4 * k + j] + (c >> 4) * xb[16 + 4 * k + j];
          }
    }
    const int32_t offset = base == KILN_GGML_TYPE_Q8_0   ? 128 * xq.s[b]
                           : base == KILN_GGML_TYPE_Q4_0 ? 8 * xq.s[b]
                                                         : 0;
    for (int32_t r = 0; r < R; ++r) {
      const float dw = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(scales + r * 2));
      acc[r] += (float)(isum[r] - offset) * (dw * xq.d[b]);
      if (base == KILN_GGML_TYPE_Q4_1)
        acc[r] += kiln_uk_fp16_to_fp32(kiln_uk_load_u16(mins + r * 2)) * xq.ds[b];
    }
  }
  packed_store_rows(a, t, g * R, acc, R);
}

KILN_UK_INLINE void packed_generic_groups(const packed_args_t *a, uint32_t format, int64_t g0,
                                          int64_t g1) {
  for (int64_t g = g0; g < g1; ++g)
    for (int32_t t = 0; t < a->n; ++t)
      packed_generic_group_token(a, format, g, t);
}

#endif /* KILN_CODEGEN_CPU_UKERNELS_PACKED_COMMON_H_ */
