/* kiln_vulkan_describe_program: a GPU program section as `kiln inspect` prints it. The
 * placement is the one kiln_vk_place makes at open, here for a device with every optional
 * capability and one without subgroup arithmetic, so no device is opened. */
#include <stdio.h>
#include <string.h>

#include "kiln/vulkan.h"
#include "vk_placement.h"

kiln_status_t kiln_vulkan_describe_program(const void *section, uint64_t size, char *buf,
                                           size_t buf_size, kiln_error_t *err) {
  kiln_vk_program_t p;
  kiln_status_t st = kiln_vk_program_read((const uint8_t *)section, size, &p, err);
  if (st)
    return st;
  kiln_vk_device_info_t with, without;
  memset(&with, 0, sizeof with);
  with.subgroup_arithmetic = 1;
  with.integer_dot = 1;
  with.fp16_arithmetic = 1;
  without = with;
  without.subgroup_arithmetic = 0;
  kiln_vk_placement_t on, off;
  const kiln_vk_place_options_t as_compiled = {0, 1, 0};
  st = kiln_vk_place(&p, &with, &as_compiled, &on, err);
  if (!st && (st = kiln_vk_place(&p, &without, &as_compiled, &off, err)))
    kiln_vk_placement_free(&on);
  if (st) {
    kiln_vk_program_free(&p);
    return st;
  }
  size_t at = 0;
#define PUT(...)                                                                           \
  at += (size_t)snprintf(buf + (at < buf_size ? at : buf_size),                            \
                         at < buf_size ? buf_size - at : 0, __VA_ARGS__)
  uint32_t per[2] = {0, 0}; /* dispatches of a decode step, of a prefill batch */
  for (uint32_t i = 0; i < p.n_steps; ++i)
    for (int kind = 0; kind < 2; ++kind)
      per[kind] += (uint32_t)(p.steps[i].kernel != KILN_GPU_NO_KERNEL &&
                              kiln_vk_step_applies(&p.steps[i], kind == KILN_VK_DECODE ? 1 : 2));
  PUT("gpu program: Vulkan 1.1, %u kernels, %u ops, %u dispatches a decode step and %u a "
      "prefill batch, %llu bytes of GPU scratch\n  kernels:",
      p.n_kernels, on.n_ops, per[0], per[1], (unsigned long long)p.gpu_scratch_bytes);
  for (uint32_t k = 0; k < p.n_kernels; ++k) {
    const char *needs[3] = {
        on.needs[k] & KILN_VK_NEEDS_ARITHMETIC ? "subgroup arithmetic" : NULL,
        on.needs[k] & KILN_VK_NEEDS_DOT ? "integer dot products" : NULL,
        on.needs[k] & KILN_VK_NEEDS_FP16 ? "fp16 arithmetic" : NULL};
    PUT("%s %s", k ? "," : "", p.kernels[k].name);
    if (!on.kernel_ok[k]) {
      PUT(" (%s)", on.kernel_why[k]);
    } else {
      int n = 0;
      for (int i = 0; i < 3; ++i)
        if (needs[i])
          PUT("%s%s", n++ ? ", " : " (", needs[i]);
      if (n)
        PUT(")");
    }
    if (p.kernels[k].replaces != KILN_GPU_NO_KERNEL)
      PUT(" as a variant of %s where that is fast", p.kernels[p.kernels[k].replaces].name);
  }
  PUT("\n  placement on a device with subgroup arithmetic: ");
  at += kiln_vk_placement_text(&on, &p, buf + (at < buf_size ? at : buf_size),
                               at < buf_size ? buf_size - at : 0);
  PUT("\n  placement on a device without it: ");
  at += kiln_vk_placement_text(&off, &p, buf + (at < buf_size ? at : buf_size),
                               at < buf_size ? buf_size - at : 0);
  PUT("\n  an op off the GPU runs the artifact's CPU code (kiln_model_op_<k>); the runtime "
      "decides at open from the device it finds (kiln-run --backend cpu|vulkan|auto)\n");
#undef PUT
  kiln_vk_placement_free(&on);
  kiln_vk_placement_free(&off);
  kiln_vk_program_free(&p);
  return KILN_STATUS_OK;
}
