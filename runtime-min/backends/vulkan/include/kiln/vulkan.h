/* kiln runtime-min: the Vulkan backend (library kiln_vulkan). Pass it as
 * kiln_session_options_t.backend to run an artifact compiled with a `+vulkan` target on
 * the GPU. libvulkan is loaded at run time: an app that links kiln_vulkan still starts on
 * a device without Vulkan, and session create then fails with the reason.
 *
 * Environment: KILN_VULKAN_DEVICE=<index> picks a physical device (default: the first that
 * can run kiln's kernels); KILN_VULKAN_VALIDATION=1 enables the Khronos validation layer
 * and prints how many messages it gave when the session ends (tests); KILN_VULKAN_PROFILE=1
 * prints the GPU time per kernel then; KILN_VULKAN_MASK=subgroup-arithmetic treats the device
 * as lacking it, so the ops whose kernels need it run on the CPU, and =variants runs every
 * kernel as compiled; KILN_VULKAN_PREFER=variants takes kernel variants (linear_dot,
 * matmul_f16) wherever the device can run them, faster there or not; KILN_VULKAN_FAULT=
 * device-lost:K makes the K-th submit report a lost device (tests of that error path);
 * KILN_VULKAN_MAX_RANGE=<bytes> binds at most that many bytes of a buffer, below the
 * device's maxStorageBufferRange (tests of weights bound in windows). */
#ifndef KILN_VULKAN_H_
#define KILN_VULKAN_H_

#include "kiln/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

const kiln_backend_t *kiln_vulkan_backend(void);

/* A GPU program section (kiln_artifact_t.gpu, 4-byte aligned) described for a person: its
 * kernels and what each needs of a device, dispatches a pass, and which ops a device with
 * and without each optional capability would run, as the backend decides at open (no
 * device is opened). Writes a NUL-terminated text of several lines to buf, cut to
 * buf_size; KILN_STATUS_CORRUPT for a bad section. `kiln inspect` prints it. */
kiln_status_t kiln_vulkan_describe_program(const void *section, uint64_t size, char *buf,
                                           size_t buf_size, kiln_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* KILN_VULKAN_H_ */
