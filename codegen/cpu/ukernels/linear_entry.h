/* kiln micro-kernels: the entry points of kiln_uk_linear / kiln_uk_linear_fused (internal),
 * shared by generic/linear.c and x86/linear.c. Each includes this file last, after defining
 * its linear_rows(a, format, mode, r0, r1): the ISA-specific loop over output rows r0..r1-1
 * for one weight format and store mode (both constants after inlining).
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_LINEAR_ENTRY_H_
#define KILN_CODEGEN_CPU_UKERNELS_LINEAR_ENTRY_H_

/* The formats kiln_uk_linear takes, in one list: the entry's check and the task's dispatch
 * both expand it, so a format added here is both accepted and run. */
#define LINEAR_FORMATS(X)                                                                        \
  X(KILN_GGML_TYPE_F32) X(KILN_GGML_TYPE_F16) X(KILN_GGML_TYPE_Q8_0) X(KILN_GGML_TYPE_Q4_0)      \
  X(KILN_GGML_TYPE_Q4_1) X(KILN_TYPE_Q3_0) X(KILN_GGML_TYPE_Q4_K) X(KILN_GGML_TYPE_Q5_K)      \
  X(KILN_GGML_TYPE_Q6_K)

static int linear_format_supported(uint32_t format) {
#define ACCEPT(fmt) case fmt:
  switch (format) {
    LINEAR_FORMATS(ACCEPT)
    return 1;
  default: return 0;
  }
#undef ACCEPT
}

static void linear_task(void *arg, int32_t task, int32_t n_tasks) {
  const linear_args_t *a = (const linear_args_t *)arg;
  int64_t r0, r1;
  const int64_t pair = a->ep.swiglu ? 2 : 1; /* a gate row and its up row share a task */
  kiln_uk_task_range(a->out_features / pair, task, n_tasks, &r0, &r1);
  r0 *= pair;
  r1 *= pair;
  /* one specialised copy per format and store mode */
  const int32_t mode = KILN_UK_STORE_MODE(&a->ep);
#define ROWS(fmt)                                                                                  \
  switch (mode) {                                                                                  \
  case KILN_UK_STORE_PLAIN: linear_rows(a, fmt, KILN_UK_STORE_PLAIN, r0, r1); break;               \
  case KILN_UK_STORE_SEGMENTS: linear_rows(a, fmt, KILN_UK_STORE_SEGMENTS, r0, r1); break;         \
  case KILN_UK_STORE_RESIDUAL: linear_rows(a, fmt, KILN_UK_STORE_RESIDUAL, r0, r1); break;         \
  default: linear_rows(a, fmt, KILN_UK_STORE_SWIGLU, r0, r1); break;                               \
  }
#define RUN(fmt)                                                                                   \
  case fmt: ROWS(fmt); break;
  switch (a->format) {
    LINEAR_FORMATS(RUN)
  default: break; /* unreachable: kiln_uk_linear_fused took only LINEAR_FORMATS */
  }
#undef RUN
#undef ROWS
}

void kiln_uk_linear_fused(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x,
                          int32_t n, int32_t in, const uint8_t *w, int64_t row_stride,
                          int32_t rows, float *y0, int32_t w0, float *y1, int32_t w1, float *y2,
                          int32_t w2, const float *residual, int32_t swiglu) {
  /* The lowering passes only these formats (the others are repacked or converted at
   * compile time); any other id would run another format's loop over its bytes. */
  if (n <= 0 || rows <= 0 || !linear_format_supported(format))
    return;
  linear_args_t a = {format, x, n, in, w, row_stride, rows,
                     {{y0, y1, y2}, {w0, w1, w2}, residual, swiglu}};
  const int64_t work = (int64_t)n * in * rows;
  const int32_t n_tasks = kiln_uk_task_count(ctx, work, KILN_UK_LINEAR_PARALLEL_MIN_WORK,
                                             swiglu ? rows / 2 : rows,
                                             KILN_UK_LINEAR_TASKS_PER_THREAD);
  kiln_uk_parallel(ctx, linear_task, &a, n_tasks);
}

void kiln_uk_linear(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x, int32_t n,
                    int32_t in, const uint8_t *w, int64_t row_stride, int32_t out_features,
                    float *y) {
  kiln_uk_linear_fused(ctx, format, x, n, in, w, row_stride, out_features, y, out_features,
                       0, 0, 0, 0, 0, 0);
}

#endif /* KILN_CODEGEN_CPU_UKERNELS_LINEAR_ENTRY_H_ */
