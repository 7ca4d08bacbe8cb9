/* kiln micro-kernels: the entry points of kiln_uk_linear_packed (internal), shared by
 * every linear_packed.c. Each includes this file last, after defining its
 * packed_groups(a, format, g0, g1): the ISA-specific loop over 16-row (r16) groups, and
 * optionally packed_groups_r32 for 32-row groups (default: the portable C code).
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_LINEAR_PACKED_ENTRY_H_
#define KILN_CODEGEN_CPU_UKERNELS_LINEAR_PACKED_ENTRY_H_

/* An implementation may rearrange the quantised activations (serially, after quantising,
 * before the product's tasks) by defining packed_after_quantize(a) first. */
#ifndef packed_after_quantize
#define packed_after_quantize(a) ((void)(a))
#endif
#ifndef packed_groups_r32
#define packed_groups_r32 packed_generic_groups
#endif
/* ... and packed_kquant_groups for the K-quants' r16 forms (default: the portable C code). */
#include "packed_kquant.h"
#ifndef packed_kquant_groups
#define packed_kquant_groups kq_generic_groups
#endif
/* An implementation may walk a decode step's r16 groups as several forward streams per
 * task by defining PACKED_DECODE_LANES (the most lanes of any format),
 * PACKED_DECODE_LANES_OF(format) (a format's lanes, a constant) and
 * packed_decode_lanes(a, format, task, n_tasks): the groups cut into that many lanes, task
 * i taking its share [i/n, (i+1)/n) of every lane, so a thread's run of tasks walks each
 * lane forward. A linear walks lanes when each task gets a group of each lane. */
#ifndef PACKED_DECODE_LANES
#define PACKED_DECODE_LANES 1
#endif
#ifndef PACKED_DECODE_LANES_OF
#define PACKED_DECODE_LANES_OF(format) PACKED_DECODE_LANES
#endif

static void packed_task(void *arg, int32_t task, int32_t n_tasks) {
  const packed_args_t *a = (const packed_args_t *)arg;
#if PACKED_DECODE_LANES > 1
  if (a->n == 1 && a->groups >= (int64_t)PACKED_DECODE_LANES_OF(a->format) * n_tasks) {
    switch (a->format) {
    case KILN_TYPE_Q4_0_R16: packed_decode_lanes(a, KILN_TYPE_Q4_0_R16, task, n_tasks); return;
    case KILN_TYPE_Q4_1_R16: packed_decode_lanes(a, KILN_TYPE_Q4_1_R16, task, n_tasks); return;
    case KILN_TYPE_Q8_0_R16: packed_decode_lanes(a, KILN_TYPE_Q8_0_R16, task, n_tasks); return;
    default: break; /* r32: one stream, below */
    }
  }
#endif
  int64_t g0, g1;
  kiln_uk_task_range(a->groups, task, n_tasks, &g0, &g1);
  switch (a->format) {
  case KILN_TYPE_Q4_0_R16: packed_groups(a, KILN_TYPE_Q4_0_R16, g0, g1); break;
  case KILN_TYPE_Q4_1_R16: packed_groups(a, KILN_TYPE_Q4_1_R16, g0, g1); break;
  case KILN_TYPE_Q4_0_R32: packed_groups_r32(a, KILN_TYPE_Q4_0_R32, g0, g1); break;
  case KILN_TYPE_Q4_1_R32: packed_groups_r32(a, KILN_TYPE_Q4_1_R32, g0, g1); break;
  case KILN_TYPE_Q8_0_R32: packed_groups_r32(a, KILN_TYPE_Q8_0_R32, g0, g1); break;
  case KILN_TYPE_Q8_0_R16: packed_groups(a, KILN_TYPE_Q8_0_R16, g0, g1); break;
  case KILN_TYPE_Q4_K_R16: packed_kquant_groups(a, KILN_TYPE_Q4_K_R16, g0, g1); break;
  case KILN_TYPE_Q5_K_R16: packed_kquant_groups(a, KILN_TYPE_Q5_K_R16, g0, g1); break;
  case KILN_TYPE_Q6_K_R16: packed_kquant_groups(a, KILN_TYPE_Q6_K_R16, g0, g1); break;
  default: break; /* unreachable: the entry points take only kiln_is_packed formats */
  }
}

void kiln_uk_linear_packed(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x,
                           int32_t n, int32_t in, const uint8_t *w, int64_t group_stride,
                           int32_t out_features, float *y, uint8_t *qscratch,
                           int32_t shard_groups) {
  /* The lowering calls this only for repacked formats; any other id has no row groups
   * (kiln_packed_rows is 0), so there is nothing it could compute. */
  if (n <= 0 || out_features <= 0 || !kiln_is_packed(format))
    return;
  packed_args_t a;
  const int32_t tasks =
      packed_prepare(ctx, &a, format, x, n, in, w, group_stride, out_features, y, qscratch,
                     shard_groups);
  packed_after_quantize(&a);
  kiln_uk_parallel(ctx, packed_task, &a, tasks);
}

void kiln_uk_linear_packed_fused(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x,
                                 int32_t n, int32_t in, const uint8_t *w, int64_t group_stride,
                                 int32_t rows, float *y0, int32_t w0, float *y1, int32_t w1,
                                 float *y2, int32_t w2, const float *residual, int32_t swiglu,
                                 uint8_t *qscratch, int32_t shard_groups) {
  if (n <= 0 || rows <= 0 || !kiln_is_packed(format)) /* as kiln_uk_linear_packed */
    return;
  packed_args_t a;
  const int32_t tasks =
      packed_prepare(ctx, &a, format, x, n, in, w, group_stride, rows, y0, qscratch,
                     shard_groups);
  packed_set_epilogue(&a, y0, w0, y1, w1, y2, w2, residual, swiglu);
  packed_after_quantize(&a);
  kiln_uk_parallel(ctx, packed_task, &a, tasks);
}

#endif /* KILN_CODEGEN_CPU_UKERNELS_LINEAR_PACKED_ENTRY_H_ */
