/* kiln runtime-min: the seam between a session and what runs its forward passes.
 *
 * A backend runs a session's forward passes; the session keeps positions, sampling and
 * statistics. The CPU is one (kiln_cpu_backend(): the artifact's own code on the session's
 * KV cache, scratch and thread pool); the Vulkan one (kiln_vulkan_backend(), kiln/vulkan.h,
 * in its own library) runs the pass on a GPU from what the artifact carries for it
 * (kiln/gpu_program.h), with its own KV cache, and runs the ops the device lacks through the
 * artifact's CPU code on the session's pool. A session is given backends in the order it
 * should prefer them (kiln_session_options_t.backends: an NPU's, then a GPU's, then the
 * CPU); the first that opens runs it, and why each earlier one did not is kept
 * (kiln_session_backend_passed_over).
 */
#ifndef KILN_BACKEND_H_
#define KILN_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/abi.h"
#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a session lends a backend, valid until the backend's close. */
typedef struct kiln_backend_host_s {
  const kiln_artifact_t *artifact;
  /* The session's execution context: its thread pool (parallel_for, pool, n_threads: the
   * governor may change them between passes), its weights (a module's view once applied),
   * and the KV cache and scratch of the artifact's CPU code when the backend
   * uses_host_memory, else NULL. */
  const kiln_exec_ctx_t *ctx;
} kiln_backend_host_t;

/* Every error a backend sets starts with its name ("vulkan: ..."); the session passes it on
 * as it is. */
typedef struct kiln_backend_s {
  const char *name; /* "cpu", "vulkan" */
  /* nonzero: the session allocates the CPU code's KV cache and scratch for this backend
   * (host->ctx). 0: the backend keeps its own on its device. */
  int uses_host_memory;
  /* Prepares everything a session needs on the device (weights uploaded once, buffers,
   * pipelines); *state is passed to the other calls. */
  kiln_status_t (*open)(const kiln_backend_host_t *host, void **state, kiln_error_t *err);
  /* n tokens (1..max_batch) at positions; writes logits [n, vocab], or only row n - 1 when
   * last_only, as the CPU code does. */
  kiln_status_t (*forward)(void *state, const int32_t *tokens, const int32_t *positions,
                           int32_t n, float *logits, int last_only, kiln_error_t *err);
  /* The device's name and the GPU time of each dispatch of the last forward pass
   * (nanoseconds); returns how many were written. Either may be NULL. */
  const char *(*device)(void *state);
  uint32_t (*dispatch_times)(void *state, double *ns, uint32_t cap);
  /* What runs where and why, one line into buf (cut to size, NUL-terminated); returns the
   * length it wanted. NULL: everything on the backend's device. */
  size_t (*placement)(void *state, char *buf, size_t size);
  void (*close)(void *state);
} kiln_backend_t;

/* The artifact's CPU code as a backend: opens wherever the artifact opened. */
const kiln_backend_t *kiln_cpu_backend(void);

/* The backend a session runs on, and its device's name ("cpu" for the CPU backend). */
const kiln_backend_t *kiln_session_backend(const kiln_session_t *session);
const char *kiln_session_backend_device(const kiln_session_t *session);
/* The backend's placement line (kiln_backend_t.placement) into buf; "" without one. */
void kiln_session_backend_placement(const kiln_session_t *session, char *buf, size_t size);
/* Why the backends before the one running did not open, "name: reason; ..." ("" when the
 * first did). */
const char *kiln_session_backend_passed_over(const kiln_session_t *session);

#ifdef __cplusplus
}
#endif
#endif /* KILN_BACKEND_H_ */
