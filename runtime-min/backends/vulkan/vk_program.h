/* A GPU program section (kiln/gpu_program.h) read into memory and checked. Internal. */
#ifndef KILN_VK_PROGRAM_H_
#define KILN_VK_PROGRAM_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/gpu_program.h"
#include "kiln/kiln.h"

typedef struct kiln_vk_value {
  int32_t a; /* value = a * n + b */
  uint32_t b;
} kiln_vk_value_t;

typedef struct kiln_vk_groups {
  uint32_t a, b, div; /* ceil((a * n + b) / div) */
} kiln_vk_groups_t;

typedef struct kiln_vk_step {
  uint32_t kernel;
  uint32_t when; /* KILN_GPU_WHEN_* */
  uint32_t op;   /* the model op it computes (steps come in op order) */
  uint32_t n_spec, spec[KILN_GPU_MAX_CONSTANTS];
  uint32_t n_bind, bind[KILN_GPU_MAX_BINDINGS];
  uint32_t n_push;
  kiln_vk_value_t push[KILN_GPU_MAX_PUSH_WORDS];
  kiln_vk_groups_t groups[3];
  /* The bytes [weights_lo, weights_hi) of the weights section it reads (equal: none), and
   * the push words holding an offset into it, each divided by its divisor. */
  uint64_t weights_lo, weights_hi;
  uint32_t n_offsets;
  uint8_t offset_word[KILN_GPU_MAX_PUSH_WORDS];
  uint32_t offset_divisor[KILN_GPU_MAX_PUSH_WORDS];
} kiln_vk_step_t;

typedef struct kiln_vk_program_kernel {
  char name[64];
  uint32_t replaces; /* the kernel this variant may stand in for, or KILN_GPU_NO_KERNEL */
  const uint32_t *words; /* inside the section (4-byte aligned) */
  uint32_t n_words;
} kiln_vk_program_kernel_t;

typedef struct kiln_vk_program {
  uint32_t n_kernels, n_steps;
  uint64_t gpu_scratch_bytes;
  kiln_vk_program_kernel_t kernels[KILN_GPU_MAX_KERNELS];
  kiln_vk_step_t *steps; /* malloc'd */
} kiln_vk_program_t;

/* Reads and checks `size` bytes (4-byte aligned); KILN_STATUS_CORRUPT naming the first
 * problem. kiln_vk_program_free releases the steps. */
kiln_status_t kiln_vk_program_read(const uint8_t *data, uint64_t size, kiln_vk_program_t *out,
                                   kiln_error_t *err);
void kiln_vk_program_free(kiln_vk_program_t *p);

/* a * n + b, and ceil((a * n + b) / div). */
static inline uint32_t kiln_vk_value_at(kiln_vk_value_t v, uint32_t n) {
  return (uint32_t)((int64_t)v.a * n + v.b);
}
static inline uint32_t kiln_vk_groups_at(kiln_vk_groups_t g, uint32_t n) {
  const uint64_t v = (uint64_t)g.a * n + g.b;
  return (uint32_t)((v + g.div - 1) / g.div);
}

#endif /* KILN_VK_PROGRAM_H_ */
