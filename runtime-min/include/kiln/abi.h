/* kiln runtime-min: the ABI between generated model code and the runtime.
 *
 * The code section of an artifact is a shared object (or, with --emit=obj, an object
 * linked into the app) exporting one function, KILN_ABI_ENTRY. The runtime owns every
 * buffer; generated code and its micro-kernels never allocate and never call libc.
 * Micro-kernel signatures are in codegen/common/ukernel_abi.h (shared with this header's
 * types).
 */
#ifndef KILN_ABI_H_
#define KILN_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_VERSION 2u /* 2: kiln_exec_ctx_t.last_logits_only */
#define KILN_ABI_ENTRY "kiln_model_forward"
/* Per-op entries (the entry's signature, no input check) that a `+vulkan` artifact's code
 * also exports: this prefix followed by the op's place in the model. */
#define KILN_OP_ENTRY_PREFIX "kiln_model_op_"

/* Runs fn(arg, task, n_tasks) for every task in [0, n_tasks), possibly on several threads,
 * and returns when all are done. */
typedef void (*kiln_task_fn_t)(void *arg, int32_t task, int32_t n_tasks);
typedef void (*kiln_parallel_for_fn_t)(void *pool, kiln_task_fn_t fn, void *arg,
                                       int32_t n_tasks);

typedef struct kiln_exec_ctx_s {
  uint32_t abi_version;           /* KILN_ABI_VERSION */
  uint32_t n_threads;             /* threads parallel_for may use (>= 1) */
  const uint8_t *weights;         /* weights section base: page aligned (the section is mapped
                                     at a page; HVX loads of r32 matrices need 128 bytes) */
  uint8_t *scratch;               /* MemoryPlan.scratch_bytes, 64-byte aligned */
  uint8_t *kv;                    /* MemoryPlan.kv_bytes, 64-byte aligned */
  kiln_parallel_for_fn_t parallel_for; /* never NULL (a serial loop for 1 thread) */
  void *pool;                     /* passed back to parallel_for */
  uint32_t last_logits_only;      /* nonzero: the logits of row n_tokens - 1 only (the
                                     other rows of the logits buffer are left unspecified):
                                     what follows the last attention op runs on that row
                                     alone */
} kiln_exec_ctx_t;

/* The entry point. Evaluates n_tokens (1..MemoryPlan.max_batch) tokens at the given
 * positions (each < MemoryPlan.max_ctx; the KV cache must hold every earlier position)
 * and writes n_tokens rows of vocab_size logits (the last only with ctx->last_logits_only).
 * Returns 0, or a negative value when an argument is out of range (nothing is written
 * then). */
typedef int32_t (*kiln_model_forward_fn_t)(const kiln_exec_ctx_t *ctx, const int32_t *tokens,
                                           const int32_t *positions, int32_t n_tokens,
                                           float *logits);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_H_ */
