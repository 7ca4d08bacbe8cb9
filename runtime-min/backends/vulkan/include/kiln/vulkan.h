/* kiln runtime-min: the Vulkan backend (library kiln_vulkan). Pass it as
 * kiln_session_options_t.backend to run an artifact compiled with a `+vulkan` target on
 * the GPU. libvulkan is loaded at run time: an app that links kiln_vulkan still starts on
 * a device without Vulkan, and session create then fails with the reason.
 *
 * Environment: KILN_VULKAN_DEVICE=<index> picks a physical device (default: the first that
 * can run kiln's kernels); KILN_VULKAN_VALIDATION=1 enables the Khronos validation layer
 * and prints how many messages it gave when the session ends (tests); KILN_VULKAN_PROFILE=1
 * prints the GPU time per kernel then; KILN_VULKAN_MASK=subgroup-arithmetic treats the device
 * as lacking it, so the ops whose kernels need it run on the CPU; KILN_VULKAN_FAULT=
 * device-lost:K makes the K-th submit report a lost device (tests of that error path). */
#ifndef KILN_VULKAN_H_
#define KILN_VULKAN_H_

#include "kiln/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

const kiln_backend_t *kiln_vulkan_backend(void);

#ifdef __cplusplus
}
#endif
#endif /* KILN_VULKAN_H_ */
