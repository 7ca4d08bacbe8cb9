/* kiln runtime-min: modules - separately compiled parts applied to a live session.
 *
 * A module is a file in the artifact format without code (docs/artifact-format.md,
 * "Modules"), compiled for one base artifact by `kiln compile --base BASE.kiln`:
 *   adapter  a LoRA adapter merged into the tensors it adapts (W + scale * B A), each
 *            rounded to the base tensor's own format and layout;
 *   head     a domain head: the final norm and/or output layer;
 *   filter   a safety filter: token ids the model may never produce.
 * A module's tensors replace the base's tensors of the same name byte for byte, so the
 * base's code runs them unchanged. It fits exactly the base whose weights it was compiled
 * against (the weights section's checksum): anything else is refused with a message naming
 * what differs. Applying one writes its tensors into the session's own copy-on-write view
 * of the weights (only the pages it touches are copied; the artifact and its other sessions
 * are untouched), so swapping adapters costs a copy of the adapted tensors, not a reload.
 * Separate library (kiln_module), POSIX mmap; a platform without it copies the weights.
 */
#ifndef KILN_MODULE_H_
#define KILN_MODULE_H_

#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_module_s kiln_module_t;

typedef struct kiln_module_info_s {
  const char *kind;            /* "adapter", "head" or "filter" */
  const char *name;
  const char *version;         /* "" when the compile gave none */
  uint64_t base_weights_xxh64; /* the base artifact's weights checksum it was built for */
  uint64_t base_weights_bytes;
  uint32_t num_tensors;        /* base tensors it replaces */
  uint64_t tensor_bytes;       /* their bytes */
  uint32_t num_banned;         /* token ids it bans */
  uint64_t file_bytes;
  uint32_t signature;          /* kiln_signature_state_t */
} kiln_module_info_t;

/* Maps path and verifies it as kiln_artifact_open verifies a model (preamble, header and
 * section checksums; with public_key, the signature), then its module record and tensor
 * table. A model artifact is KILN_STATUS_INVALID_ARGUMENT. allocator may be NULL. */
kiln_status_t kiln_module_open(const char *path, const uint8_t *public_key,
                               const kiln_allocator_t *allocator, kiln_module_t **out_module,
                               kiln_error_t *out_error);
void kiln_module_close(kiln_module_t *module);
void kiln_module_info(const kiln_module_t *module, kiln_module_info_t *out_info);

/* KILN_STATUS_OK when module fits base: compiled against base's weights (same checksum and
 * size), each of its tensors present in base with the same format, shape, row stride and
 * size, each banned id inside the vocabulary. Else KILN_STATUS_UNSUPPORTED and a message
 * naming the difference. */
kiln_status_t kiln_module_check(const kiln_module_t *module, const kiln_artifact_t *base,
                                kiln_error_t *out_error);

/* Makes `modules` (n of them; n == 0: none, the base alone) the session's modules,
 * replacing whatever it had: the previous modules' tensors go back to the base's bytes,
 * these modules' tensors are written, their bans take effect on the next forward pass.
 * Every module is checked first (kiln_module_check; two modules replacing one tensor is
 * KILN_STATUS_INVALID_ARGUMENT), and on any error the session keeps what it had. The
 * modules may be closed afterwards. The KV cache keeps what earlier tokens computed with
 * the previous weights: kiln_session_reset for a clean start. Call between forward passes
 * (a session is used from one thread at a time). Uses malloc for the session's small module
 * records and mmap for its view (freed with the session); prefill and decode allocate
 * nothing more. */
kiln_status_t kiln_session_apply_modules(kiln_session_t *session,
                                         const kiln_module_t *const *modules, uint32_t n,
                                         kiln_error_t *out_error);

#ifdef __cplusplus
}
#endif

#endif /* KILN_MODULE_H_ */
