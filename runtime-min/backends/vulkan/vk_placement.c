/* Placing a GPU program's ops: the device's capabilities against each kernel's SPIR-V. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/platform/error.h"
#include "vk_placement.h"

/* SPIR-V: OpCapability, OpFunction, and the capabilities kiln's kernels may declare. */
enum { OP_CAPABILITY = 17, OP_FUNCTION = 54 };
enum {
  CAP_SHADER = 1,
  CAP_FLOAT16 = 9,
  CAP_GROUP_NON_UNIFORM = 61,
  CAP_GROUP_NON_UNIFORM_ARITHMETIC = 63,
  CAP_DOT_PRODUCT_INPUT_4X8_PACKED = 6018,
  CAP_DOT_PRODUCT = 6019
};

/* 1 when the device has every capability the module declares; else 0 and why (the first
 * missing one). *needs: KILN_VK_NEEDS_* of the whole module, read to its end either way. */
static int kernel_runs(const kiln_vk_program_kernel_t *k, int arithmetic,
                       const kiln_vk_device_info_t *info, uint8_t *needs, char *why,
                       size_t why_size) {
  *needs = 0;
  int ok = 1;
  for (uint32_t i = 5; i < k->n_words;) {
    const uint32_t op = k->words[i] & 0xffffu, len = k->words[i] >> 16;
    if (len == 0 || op == OP_FUNCTION)
      break;
    if (op == OP_CAPABILITY && len >= 2 && i + 1 < k->n_words) {
      const uint32_t cap = k->words[i + 1];
      const char *missing = NULL;
      if (cap == CAP_GROUP_NON_UNIFORM_ARITHMETIC) {
        *needs |= KILN_VK_NEEDS_ARITHMETIC;
        missing = arithmetic ? NULL : "the device has no subgroup arithmetic";
      } else if (cap == CAP_DOT_PRODUCT || cap == CAP_DOT_PRODUCT_INPUT_4X8_PACKED) {
        *needs |= KILN_VK_NEEDS_DOT;
        missing = info->integer_dot ? NULL : "the device has no integer dot products";
      } else if (cap == CAP_FLOAT16) {
        *needs |= KILN_VK_NEEDS_FP16;
        missing = info->fp16_arithmetic ? NULL : "the device has no fp16 arithmetic";
      } else if (cap != CAP_SHADER && cap != CAP_GROUP_NON_UNIFORM) {
        snprintf(why, why_size, "it needs SPIR-V capability %u", cap);
        return 0;
      }
      if (missing && ok) {
        snprintf(why, why_size, "%s", missing);
        ok = 0;
      }
    }
    i += len;
  }
  return ok;
}

kiln_status_t kiln_vk_place(const kiln_vk_program_t *p, const kiln_vk_device_info_t *info,
                            const kiln_vk_place_options_t *o, kiln_vk_placement_t *pl,
                            kiln_error_t *err) {
  memset(pl, 0, sizeof *pl);
  const int arithmetic = info->subgroup_arithmetic && !o->mask_arithmetic;
  for (uint32_t k = 0; k < p->n_kernels; ++k) {
    pl->use[k] = k;
    pl->kernel_ok[k] = (uint8_t)kernel_runs(&p->kernels[k], arithmetic, info, &pl->needs[k],
                                            pl->kernel_why[k], sizeof pl->kernel_why[k]);
  }
  /* A variant replaces its kernel where the device runs it and is better at it: dot
   * products where they are accelerated, fp16 on a GPU rather than a CPU device, where it
   * is emulated (docs/vulkan.md, "Kernel variants"). */
  const int better = KILN_VK_NEEDS_ARITHMETIC |
                     (info->integer_dot_accelerated ? KILN_VK_NEEDS_DOT : 0) |
                     (info->fp16_arithmetic && !info->cpu_device ? KILN_VK_NEEDS_FP16 : 0);
  for (uint32_t v = 0; v < p->n_kernels; ++v) {
    const uint32_t base = p->kernels[v].replaces;
    if (base == KILN_GPU_NO_KERNEL || !pl->kernel_ok[v] || o->mask_variants)
      continue;
    if (o->force_variants || (pl->needs[v] & ~better) == 0) {
      pl->use[base] = v;
      pl->kernel_ok[base] = 1;
    }
  }
  uint64_t max = info->max_storage_buffer_range;
  if (o->max_range && (!max || o->max_range < max))
    max = o->max_range;
  pl->max_range = max;
  pl->window_align = info->min_storage_buffer_offset_alignment > 4
                         ? info->min_storage_buffer_offset_alignment
                         : 4;
  pl->windowed = max && o->weights_size > max;
  if (pl->windowed) {
    if (!(pl->oversized = (uint8_t *)calloc(p->n_steps, 1)))
      return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
    for (uint32_t i = 0; i < p->n_steps; ++i) {
      uint64_t base, range;
      kiln_vk_window(pl, &p->steps[i], &base, &range);
      pl->oversized[i] = range > max;
      for (uint32_t j = 0; j < p->steps[i].n_offsets; ++j) /* an offset the base cannot move */
        pl->oversized[i] |= base % p->steps[i].offset_divisor[j] != 0;
    }
  }
  pl->n_ops = p->steps[p->n_steps - 1].op + 1;
  for (int kind = 0; kind < 2; ++kind) {
    pl->on_gpu[kind] = (uint8_t *)malloc(pl->n_ops);
    if (!pl->on_gpu[kind]) {
      kiln_vk_placement_free(pl);
      return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
    }
    memset(pl->on_gpu[kind], 1, pl->n_ops);
    const uint32_t n = kind == KILN_VK_DECODE ? 1 : 2;
    pl->all_gpu[kind] = 1;
    for (uint32_t i = 0; i < p->n_steps; ++i) {
      const kiln_vk_step_t *st = &p->steps[i];
      if (kiln_vk_step_applies(st, n) && !kiln_vk_step_runs(pl, p, i)) {
        pl->on_gpu[kind][st->op] = 0;
        pl->all_gpu[kind] = 0;
      }
    }
  }
  return KILN_STATUS_OK;
}

void kiln_vk_placement_free(kiln_vk_placement_t *pl) {
  free(pl->on_gpu[0]);
  free(pl->on_gpu[1]);
  free(pl->oversized);
  pl->on_gpu[0] = pl->on_gpu[1] = NULL;
  pl->oversized = NULL;
}

size_t kiln_vk_placement_text(const kiln_vk_placement_t *pl, const kiln_vk_program_t *p,
                              char *buf, size_t size) {
  size_t at = 0;
#define PUT(...)                                                                           \
  at += (size_t)snprintf(buf + (at < size ? at : size), at < size ? size - at : 0, __VA_ARGS__)
  static const char *kinds[2] = {"decode", "prefill"};
  for (int kind = 0; kind < 2; ++kind) {
    const uint32_t n = kind == KILN_VK_DECODE ? 1 : 2;
    uint32_t gpu = 0, ops = 0, cpu_only = 0, oversized = 0;
    uint32_t cpu_by_kernel[KILN_GPU_MAX_KERNELS] = {0};
    /* Each op once, counted under the first of its kernels the device cannot run. */
    for (uint32_t i = 0; i < p->n_steps;) {
      const uint32_t op = p->steps[i].op;
      uint32_t blocking = 0; /* the first step off the GPU, when `off` */
      int any = 0, off = 0;
      for (; i < p->n_steps && p->steps[i].op == op; ++i)
        if (kiln_vk_step_applies(&p->steps[i], n)) {
          any = 1;
          if (!kiln_vk_step_runs(pl, p, i) && !off) {
            off = 1;
            blocking = pl->windowed && pl->oversized[i] ? KILN_GPU_MAX_KERNELS
                                                        : p->steps[i].kernel;
          }
        }
      if (!any)
        continue;
      ++ops;
      if (!off)
        ++gpu;
      else if (blocking == KILN_GPU_NO_KERNEL)
        ++cpu_only;
      else if (blocking == KILN_GPU_MAX_KERNELS)
        ++oversized;
      else
        ++cpu_by_kernel[blocking];
    }
    PUT("%s%s: %u of %u ops on the GPU", kind ? "; " : "", kinds[kind], gpu, ops);
    if (cpu_only)
      PUT(", %u on the CPU (compiled for the CPU only: kiln compile says why)", cpu_only);
    if (oversized)
      PUT(", %u on the CPU (one dispatch's weights exceed the %llu bytes a binding may span)",
          oversized, (unsigned long long)pl->max_range);
    for (uint32_t k = 0; k < p->n_kernels; ++k) /* kernels run as a variant */
      if (pl->use[k] != k && pl->kernel_ok[k]) {
        int used = 0;
        for (uint32_t i = 0; i < p->n_steps && !used; ++i)
          used = p->steps[i].kernel == k && kiln_vk_step_applies(&p->steps[i], n);
        if (used)
          PUT(", %s as %s", p->kernels[k].name, p->kernels[pl->use[k]].name);
      }
    int first = 1;
    for (uint32_t k = 0; k < p->n_kernels; ++k)
      if (cpu_by_kernel[k]) {
        PUT("%s%u %s on the CPU (%s)", first ? ", " : ", ", cpu_by_kernel[k], p->kernels[k].name,
            pl->kernel_why[k]);
        first = 0;
      }
  }
#undef PUT
  return at;
}
