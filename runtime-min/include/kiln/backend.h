/* kiln runtime-min: the seam between a session and what runs its forward passes.
 *
 * Without a backend a session runs the artifact's CPU code. A backend (the Vulkan one is
 * kiln_vulkan_backend(), kiln/vulkan.h, in its own library) runs the whole forward pass on
 * another device from what the artifact carries for it (kiln/gpu_program.h), with its own
 * KV cache; the session keeps positions, sampling and statistics. A backend that cannot
 * run an artifact (no program for it, no device, a device lacking a feature) says why at
 * session create, and the caller chooses: kiln-run's `--backend auto` falls back to the CPU
 * and prints the reason.
 */
#ifndef KILN_BACKEND_H_
#define KILN_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every error a backend sets starts with its name ("vulkan: ..."); the session passes it on
 * as it is. */
typedef struct kiln_backend_s {
  const char *name; /* "vulkan" */
  /* Prepares everything a session needs on the device (weights uploaded once, buffers,
   * pipelines); *state is passed to the other calls. */
  kiln_status_t (*open)(const kiln_artifact_t *artifact, void **state, kiln_error_t *err);
  /* n tokens (1..max_batch) at positions; writes logits [n, vocab], or only row n - 1 when
   * last_only, as the CPU code does. */
  kiln_status_t (*forward)(void *state, const int32_t *tokens, const int32_t *positions,
                           int32_t n, float *logits, int last_only, kiln_error_t *err);
  /* The device's name and the GPU time of each dispatch of the last forward pass
   * (nanoseconds); returns how many were written. */
  const char *(*device)(void *state);
  uint32_t (*dispatch_times)(void *state, double *ns, uint32_t cap);
  /* What runs where and why, one line into buf (cut to size, NUL-terminated); returns the
   * length it wanted. NULL: everything on the backend's device. */
  size_t (*placement)(void *state, char *buf, size_t size);
  void (*close)(void *state);
} kiln_backend_t;

/* The backend a session runs on (NULL: the CPU code), and its device's name ("cpu"). */
const kiln_backend_t *kiln_session_backend(const kiln_session_t *session);
const char *kiln_session_backend_device(const kiln_session_t *session);
/* The backend's placement line (kiln_backend_t.placement) into buf; "" without one. */
void kiln_session_backend_placement(const kiln_session_t *session, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* KILN_BACKEND_H_ */
