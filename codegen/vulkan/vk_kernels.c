#include "codegen/vulkan/vk_kernels.h"

#include <string.h>

const kiln_vk_kernel_t *kiln_vk_kernel_find(const char *name) {
  for (size_t i = 0; i < kiln_vk_kernel_count; ++i)
    if (strcmp(kiln_vk_kernels[i].name, name) == 0)
      return &kiln_vk_kernels[i];
  return NULL;
}
