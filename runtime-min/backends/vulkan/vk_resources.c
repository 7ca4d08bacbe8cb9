/* Buffers and compute pipelines of the Vulkan device layer. */
#include <stdlib.h>

#include "../../src/platform/error.h"
#include "vk_internal.h"

/* A memory type allowed by `bits` with all of `flags`; -1 when none. */
static int32_t memory_type(const kiln_vk_device_t *dev, uint32_t bits,
                           VkMemoryPropertyFlags flags) {
  for (uint32_t i = 0; i < dev->memory.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (dev->memory.memoryTypes[i].propertyFlags & flags) == flags)
      return (int32_t)i;
  return -1;
}

kiln_status_t kiln_vk_buffer_create(kiln_vk_device_t *dev, uint64_t bytes,
                                    kiln_vk_buffer_t **out, kiln_error_t *err) {
  kiln_error_clear(err);
  *out = NULL;
  if (bytes == 0 || bytes % 4 != 0)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "vulkan: a buffer of %llu bytes (a positive multiple of 4 is needed)",
                          (unsigned long long)bytes);
  kiln_vk_buffer_t *b = (kiln_vk_buffer_t *)calloc(1, sizeof *b);
  if (!b)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  b->dev = dev;
  b->size = bytes;
  VkBufferCreateInfo info = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = dev->vk.vkCreateBuffer(dev->device, &info, NULL, &b->buffer);
  if (r != VK_SUCCESS) {
    kiln_vk_buffer_destroy(b);
    return kiln_vk_fail(dev, r, "vkCreateBuffer", err);
  }
  VkMemoryRequirements req;
  dev->vk.vkGetBufferMemoryRequirements(dev->device, b->buffer, &req);
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int32_t type = memory_type(dev, req.memoryTypeBits, host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0)
    type = memory_type(dev, req.memoryTypeBits, host);
  if (type < 0) {
    kiln_vk_buffer_destroy(b);
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "vulkan: no host-visible coherent memory for storage buffers");
  }
  /* A request beyond the heap is refused here: the driver's answer to it is not defined. */
  const uint32_t heap = dev->memory.memoryTypes[type].heapIndex;
  if (req.size > dev->memory.memoryHeaps[heap].size) {
    kiln_vk_buffer_destroy(b);
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY,
                          "vulkan: a buffer of %llu bytes does not fit the device's %llu-byte "
                          "memory heap",
                          (unsigned long long)bytes,
                          (unsigned long long)dev->memory.memoryHeaps[heap].size);
  }
  VkMemoryAllocateInfo alloc = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = (uint32_t)type;
  if ((r = dev->vk.vkAllocateMemory(dev->device, &alloc, NULL, &b->memory)) ||
      (r = dev->vk.vkBindBufferMemory(dev->device, b->buffer, b->memory, 0)) ||
      (r = dev->vk.vkMapMemory(dev->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->data))) {
    kiln_vk_buffer_destroy(b);
    return kiln_vk_fail(dev, r, "allocating a buffer", err);
  }
  *out = b;
  return KILN_STATUS_OK;
}

void *kiln_vk_buffer_data(kiln_vk_buffer_t *buffer) { return buffer->data; }

uint64_t kiln_vk_buffer_size(const kiln_vk_buffer_t *buffer) { return buffer->size; }

void kiln_vk_buffer_destroy(kiln_vk_buffer_t *b) {
  if (!b)
    return;
  kiln_vk_device_t *dev = b->dev;
  if (b->buffer)
    dev->vk.vkDestroyBuffer(dev->device, b->buffer, NULL);
  if (b->memory)
    dev->vk.vkFreeMemory(dev->device, b->memory, NULL); /* unmaps it */
  free(b);
}

kiln_status_t kiln_vk_pipeline_create(kiln_vk_device_t *dev, const kiln_vk_pipeline_desc_t *d,
                                      kiln_vk_pipeline_t **out, kiln_error_t *err) {
  kiln_error_clear(err);
  *out = NULL;
  const char *name = d->name ? d->name : "kernel";
  if (!d->spirv || d->spirv_words < 5 || d->spirv[0] != 0x07230203u)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "vulkan: %s: not a SPIR-V module", name);
  if (d->bindings == 0 || d->bindings > KILN_VK_MAX_BINDINGS || d->push_bytes % 4 != 0 ||
      d->push_bytes > 128 || d->spec_count > 16)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "vulkan: %s: %u bindings, %u push bytes, %u constants (at most 8, "
                          "128 in fours, 16)",
                          name, d->bindings, d->push_bytes, d->spec_count);
  kiln_vk_pipeline_t *p = (kiln_vk_pipeline_t *)calloc(1, sizeof *p);
  if (!p)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  p->dev = dev;
  p->bindings = d->bindings;
  p->push_bytes = d->push_bytes;

  VkDescriptorSetLayoutBinding bindings[KILN_VK_MAX_BINDINGS];
  for (uint32_t i = 0; i < d->bindings; ++i) {
    VkDescriptorSetLayoutBinding b = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                      VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    bindings[i] = b;
  }
  VkDescriptorSetLayoutCreateInfo set = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.bindingCount = d->bindings;
  set.pBindings = bindings;
  VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, d->push_bytes};
  VkPipelineLayoutCreateInfo layout = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &p->set_layout;
  layout.pushConstantRangeCount = d->push_bytes ? 1 : 0;
  layout.pPushConstantRanges = &push;
  VkShaderModuleCreateInfo module = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module.codeSize = d->spirv_words * 4;
  module.pCode = d->spirv;
  VkShaderModule shader = VK_NULL_HANDLE;
  VkSpecializationMapEntry entries[16];
  for (uint32_t i = 0; i < d->spec_count; ++i) {
    VkSpecializationMapEntry e = {i, i * 4, 4};
    entries[i] = e;
  }
  VkSpecializationInfo spec = {d->spec_count, entries, d->spec_count * 4u, d->spec};
  VkComputePipelineCreateInfo info = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = d->spec_count ? &spec : NULL;

  VkResult r;
  const char *step = "vkCreateDescriptorSetLayout";
  if (!(r = dev->vk.vkCreateDescriptorSetLayout(dev->device, &set, NULL, &p->set_layout)) &&
      !(r = (step = "vkCreatePipelineLayout",
             dev->vk.vkCreatePipelineLayout(dev->device, &layout, NULL, &p->layout))) &&
      !(r = (step = "vkCreateShaderModule",
             dev->vk.vkCreateShaderModule(dev->device, &module, NULL, &shader)))) {
    info.stage.module = shader;
    info.layout = p->layout;
    step = "vkCreateComputePipelines";
    r = dev->vk.vkCreateComputePipelines(dev->device, VK_NULL_HANDLE, 1, &info, NULL,
                                         &p->pipeline);
  }
  if (shader)
    dev->vk.vkDestroyShaderModule(dev->device, shader, NULL);
  if (r != VK_SUCCESS) {
    kiln_vk_pipeline_destroy(p);
    return kiln_error_prefix(err, kiln_vk_fail(dev, r, step, err), name);
  }
  *out = p;
  return KILN_STATUS_OK;
}

void kiln_vk_pipeline_destroy(kiln_vk_pipeline_t *p) {
  if (!p)
    return;
  kiln_vk_device_t *dev = p->dev;
  if (p->pipeline)
    dev->vk.vkDestroyPipeline(dev->device, p->pipeline, NULL);
  if (p->layout)
    dev->vk.vkDestroyPipelineLayout(dev->device, p->layout, NULL);
  if (p->set_layout)
    dev->vk.vkDestroyDescriptorSetLayout(dev->device, p->set_layout, NULL);
  free(p);
}
