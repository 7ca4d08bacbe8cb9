/* Which ops of a GPU program run on the device and which on the CPU. A kernel runs on the
 * device when every capability its SPIR-V declares is one the device has; an op runs there
 * when every kernel it dispatches for that batch kind (decode, prefill) does, else the
 * artifact's per-op CPU entry computes it. Internal. */
#ifndef KILN_VK_PLACEMENT_H_
#define KILN_VK_PLACEMENT_H_

#include <stddef.h>
#include <stdint.h>

#include "vk_device.h"
#include "vk_program.h"

enum { KILN_VK_DECODE = 0, KILN_VK_PREFILL = 1 };

/* What a kernel's SPIR-V asks of a device beyond Vulkan 1.1. */
enum { KILN_VK_NEEDS_ARITHMETIC = 1, KILN_VK_NEEDS_DOT = 2, KILN_VK_NEEDS_FP16 = 4 };

typedef struct kiln_vk_placement {
  /* The kernel whose SPIR-V a step of kernel k runs: k, or a variant of k the device runs
   * and is better at (linear_dot where 4x8-bit dot products are accelerated). */
  uint32_t use[KILN_GPU_MAX_KERNELS];
  uint8_t kernel_ok[KILN_GPU_MAX_KERNELS]; /* use[k] runs on the device */
  uint8_t needs[KILN_GPU_MAX_KERNELS];     /* KILN_VK_NEEDS_* of kernel k's own SPIR-V */
  char kernel_why[KILN_GPU_MAX_KERNELS][80]; /* why not, when not */
  uint8_t *on_gpu[2];                        /* per op and batch kind */
  uint32_t n_ops;
  int all_gpu[2];
  /* Weights larger than one binding may be (maxStorageBufferRange): each step binds the
   * window of them it reads, from a base aligned to window_align; a step whose window is
   * larger than max_range is oversized and its op runs on the CPU. */
  int windowed;
  uint64_t max_range, window_align;
  uint8_t *oversized; /* per step, when windowed */
} kiln_vk_placement_t;

typedef struct kiln_vk_place_options {
  int mask_arithmetic; /* treat the device as lacking subgroup arithmetic (tests, and a way
                          around a driver's broken subgroups) */
  int mask_variants;   /* take no variant: every kernel as compiled */
  int force_variants;  /* take every variant the device can run, accelerated or not (tests:
                          lavapipe has dot products, not accelerated ones) */
  uint64_t weights_size; /* the weights section's bytes */
  uint64_t max_range;    /* below the device's maxStorageBufferRange (tests); 0: the device's */
} kiln_vk_place_options_t;

kiln_status_t kiln_vk_place(const kiln_vk_program_t *p, const kiln_vk_device_info_t *info,
                            const kiln_vk_place_options_t *o, kiln_vk_placement_t *out,
                            kiln_error_t *err);
void kiln_vk_placement_free(kiln_vk_placement_t *pl);

/* Whether step i's kernel runs on the device (a step compiled for the CPU only never). */
static inline int kiln_vk_step_runs(const kiln_vk_placement_t *pl, const kiln_vk_program_t *p,
                                    uint32_t i) {
  const kiln_vk_step_t *st = &p->steps[i];
  return st->kernel != KILN_GPU_NO_KERNEL && pl->kernel_ok[st->kernel] &&
         !(pl->windowed && pl->oversized[i]);
}

/* Where step st binds the weights from, and how many bytes, when pl->windowed. */
static inline void kiln_vk_window(const kiln_vk_placement_t *pl, const kiln_vk_step_t *st,
                                  uint64_t *base, uint64_t *range) {
  *base = st->weights_lo & ~(pl->window_align - 1);
  *range = st->weights_hi > st->weights_lo ? st->weights_hi - *base : pl->window_align;
}

/* Whether step st belongs to a batch of n tokens. */
static inline int kiln_vk_step_applies(const kiln_vk_step_t *st, uint32_t n) {
  return st->when == KILN_GPU_WHEN_ALWAYS || (st->when == KILN_GPU_WHEN_DECODE) == (n == 1);
}

/* "decode: 60 of 72 ops on the GPU; on the CPU: 12 (linear: ...)", then the same for
 * prefill, in buf (NUL-terminated, cut to size); returns the length it wanted. */
size_t kiln_vk_placement_text(const kiln_vk_placement_t *pl, const kiln_vk_program_t *p,
                              char *buf, size_t size);

#endif /* KILN_VK_PLACEMENT_H_ */
