/* kiln's Vulkan kernels as SPIR-V, built from the .comp files of codegen/vulkan/kernels. Plain C: the
 * compiler embeds them in artifacts and the tests run them. */
#ifndef KILN_VK_KERNELS_H_
#define KILN_VK_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vk_kernel {
  const char *name;     /* the .comp file's stem: linear, embed, rms_norm, ... */
  const uint32_t *words;
  const size_t *word_count;
} kiln_vk_kernel_t;

extern const kiln_vk_kernel_t kiln_vk_kernels[];
extern const size_t kiln_vk_kernel_count;

/* The kernel of that name, or NULL. */
const kiln_vk_kernel_t *kiln_vk_kernel_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* KILN_VK_KERNELS_H_ */
