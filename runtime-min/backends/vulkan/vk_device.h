/* kiln's Vulkan device layer: one device and compute queue, buffers mapped into the host,
 * compute pipelines from SPIR-V with specialisation constants, and a command buffer of
 * dispatches that is recorded once and submitted as often as wanted, with a GPU timestamp
 * after every dispatch. libvulkan is loaded at run time (dlopen), so neither apps nor the
 * runtime core link against it. Internal to runtime-min/backends/vulkan and its tests;
 * docs/vulkan.md describes it. */
#ifndef KILN_VK_DEVICE_H_
#define KILN_VK_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vk_device kiln_vk_device_t;
typedef struct kiln_vk_buffer kiln_vk_buffer_t;
typedef struct kiln_vk_pipeline kiln_vk_pipeline_t;

typedef struct kiln_vk_options {
  /* Enables VK_LAYER_KHRONOS_validation and counts its warnings and errors (tests). */
  int validation;
  /* Which physical device: -1 takes the first with a compute queue. */
  int32_t device_index;
  /* The Vulkan loader to dlopen; NULL: libvulkan.so.1 (libvulkan.so on Android). */
  const char *loader_path;
  /* Dispatches one recording may hold (descriptor sets, timestamps); 0: 1024. */
  uint32_t max_dispatches;
  /* Fault injection (tests; KILN_VULKAN_FAULT=device-lost:K): the K-th submit reports
   * VK_ERROR_DEVICE_LOST as a driver does instead of running; 0: never. */
  uint32_t lose_device_at_submit;
} kiln_vk_options_t;

/* What the device reports. Kernels whose SPIR-V needs more than it has (subgroup
 * arithmetic, say) are not run on it; the backend places their ops on the CPU. */
typedef struct kiln_vk_device_info {
  char name[256];
  uint32_t api_version;
  uint32_t vendor_id, device_id;
  uint32_t subgroup_size;
  uint32_t max_shared_memory_bytes;
  uint64_t max_storage_buffer_range;
  uint64_t min_storage_buffer_offset_alignment;
  int fp16_arithmetic;   /* shaderFloat16 */
  int int8_arithmetic;   /* shaderInt8 */
  int storage_16bit;     /* storageBuffer16BitAccess */
  int storage_8bit;      /* storageBuffer8BitAccess */
  int integer_dot;       /* shaderIntegerDotProduct (Vulkan 1.3) */
  int integer_dot_accelerated; /* 4x8-bit packed, signed and mixed, run as fast instructions */
  int cpu_device;        /* VK_PHYSICAL_DEVICE_TYPE_CPU (lavapipe): fp16 and dot emulated */
  int subgroup_arithmetic; /* subgroup add/max in compute shaders (linear, norm, attention) */
  int timestamps;        /* the compute queue writes timestamps */
  double timestamp_period_ns;
} kiln_vk_device_info_t;

kiln_status_t kiln_vk_device_open(const kiln_vk_options_t *options, kiln_vk_device_t **out,
                                  kiln_error_t *err);
void kiln_vk_device_close(kiln_vk_device_t *dev);
const kiln_vk_device_info_t *kiln_vk_device_info(const kiln_vk_device_t *dev);
/* Validation-layer warnings and errors so far (0 without options.validation), and the
 * first one's text ("" when none). */
uint64_t kiln_vk_validation_messages(const kiln_vk_device_t *dev);
const char *kiln_vk_first_validation_message(const kiln_vk_device_t *dev);

/* A storage buffer in host-visible, coherent memory (device-local too where the device
 * has such memory: phones' GPUs share the SoC's DRAM), mapped for its whole life.
 * KILN_STATUS_OUT_OF_MEMORY when the device cannot hold it. */
kiln_status_t kiln_vk_buffer_create(kiln_vk_device_t *dev, uint64_t bytes,
                                    kiln_vk_buffer_t **out, kiln_error_t *err);
void *kiln_vk_buffer_data(kiln_vk_buffer_t *buffer);
uint64_t kiln_vk_buffer_size(const kiln_vk_buffer_t *buffer);
void kiln_vk_buffer_destroy(kiln_vk_buffer_t *buffer);

typedef struct kiln_vk_pipeline_desc {
  const char *name;          /* for messages */
  const uint32_t *spirv;
  size_t spirv_words;
  uint32_t bindings;         /* storage buffers at bindings 0 .. bindings - 1 (at most 8) */
  uint32_t push_bytes;       /* push-constant block size, a multiple of 4 (at most 128) */
  const uint32_t *spec;      /* 32-bit specialisation constants, ids 0 .. spec_count - 1 */
  uint32_t spec_count;
} kiln_vk_pipeline_desc_t;

kiln_status_t kiln_vk_pipeline_create(kiln_vk_device_t *dev, const kiln_vk_pipeline_desc_t *desc,
                                      kiln_vk_pipeline_t **out, kiln_error_t *err);
void kiln_vk_pipeline_destroy(kiln_vk_pipeline_t *pipeline);

/* Recording: begin, dispatches (each bound to whole buffers, one per binding; offsets go
 * in the push constants), end. Every dispatch waits for the one before it. The recording
 * can then be submitted any number of times; begin starts a new one. */
kiln_status_t kiln_vk_begin(kiln_vk_device_t *dev, kiln_error_t *err);
kiln_status_t kiln_vk_dispatch(kiln_vk_device_t *dev, kiln_vk_pipeline_t *pipeline,
                               kiln_vk_buffer_t *const *buffers, const void *push,
                               uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                               kiln_error_t *err);
/* The same with binding i bound from byte offsets[i] for ranges[i] bytes (0: to the end);
 * either array NULL: whole buffers. */
kiln_status_t kiln_vk_dispatch_ranges(kiln_vk_device_t *dev, kiln_vk_pipeline_t *pipeline,
                                      kiln_vk_buffer_t *const *buffers, const uint64_t *offsets,
                                      const uint64_t *ranges, const void *push,
                                      uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                                      kiln_error_t *err);
kiln_status_t kiln_vk_end(kiln_vk_device_t *dev, kiln_error_t *err);
/* Submits the recording and waits for it (timeout_ns; 0: no limit). A lost device is
 * KILN_STATUS_IO_ERROR, "vulkan: device lost"; the device is unusable after it. */
kiln_status_t kiln_vk_submit_wait(kiln_vk_device_t *dev, uint64_t timeout_ns, kiln_error_t *err);
/* GPU time of each dispatch of the last submission, in nanoseconds; returns how many were
 * written (0 when the queue has no timestamps). */
uint32_t kiln_vk_dispatch_times(const kiln_vk_device_t *dev, double *ns, uint32_t cap);

#ifdef __cplusplus
}
#endif
#endif /* KILN_VK_DEVICE_H_ */
