/* Recording dispatches into the device's command buffer, submitting it, and reading the
 * per-dispatch timestamps. */
#include <string.h>

#include "../../src/platform/error.h"
#include "vk_internal.h"

kiln_status_t kiln_vk_begin(kiln_vk_device_t *dev, kiln_error_t *err) {
  kiln_error_clear(err);
  if (dev->lost)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "vulkan: device lost");
  VkResult r;
  if ((r = dev->vk.vkResetCommandBuffer(dev->commands, 0)))
    return kiln_vk_fail(dev, r, "vkResetCommandBuffer", err);
  if ((r = dev->vk.vkResetDescriptorPool(dev->device, dev->descriptor_pool, 0)))
    return kiln_vk_fail(dev, r, "vkResetDescriptorPool", err);
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if ((r = dev->vk.vkBeginCommandBuffer(dev->commands, &begin)))
    return kiln_vk_fail(dev, r, "vkBeginCommandBuffer", err);
  if (dev->timestamps) {
    dev->vk.vkCmdResetQueryPool(dev->commands, dev->timestamps, 0, dev->max_dispatches + 1);
    dev->vk.vkCmdWriteTimestamp(dev->commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                                dev->timestamps, 0);
  }
  dev->recorded = 0;
  dev->recording = 1;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_vk_dispatch(kiln_vk_device_t *dev, kiln_vk_pipeline_t *pipeline,
                               kiln_vk_buffer_t *const *buffers, const void *push,
                               uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                               kiln_error_t *err) {
  return kiln_vk_dispatch_ranges(dev, pipeline, buffers, NULL, NULL, push, groups_x, groups_y,
                                 groups_z, err);
}

kiln_status_t kiln_vk_dispatch_ranges(kiln_vk_device_t *dev, kiln_vk_pipeline_t *pipeline,
                                      kiln_vk_buffer_t *const *buffers, const uint64_t *offsets,
                                      const uint64_t *ranges, const void *push,
                                      uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                                      kiln_error_t *err) {
  kiln_error_clear(err);
  if (!dev->recording)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "vulkan: a dispatch outside begin/end");
  if (dev->recorded == dev->max_dispatches)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE,
                          "vulkan: more than %u dispatches in one recording",
                          dev->max_dispatches);
  if (groups_x == 0 || groups_y == 0 || groups_z == 0)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "vulkan: a dispatch of %u x %u x %u workgroups", groups_x, groups_y,
                          groups_z);
  VkDescriptorSetAllocateInfo alloc = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  alloc.descriptorPool = dev->descriptor_pool;
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &pipeline->set_layout;
  VkDescriptorSet set;
  VkResult r = dev->vk.vkAllocateDescriptorSets(dev->device, &alloc, &set);
  if (r != VK_SUCCESS)
    return kiln_vk_fail(dev, r, "vkAllocateDescriptorSets", err);
  VkDescriptorBufferInfo infos[KILN_VK_MAX_BINDINGS];
  VkWriteDescriptorSet writes[KILN_VK_MAX_BINDINGS];
  for (uint32_t i = 0; i < pipeline->bindings; ++i) {
    if (!buffers[i])
      return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "vulkan: binding %u has no buffer",
                            i);
    VkDescriptorBufferInfo info = {buffers[i]->buffer, offsets ? offsets[i] : 0,
                                   ranges && ranges[i] ? ranges[i] : VK_WHOLE_SIZE};
    infos[i] = info;
    VkWriteDescriptorSet w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = set;
    w.dstBinding = i;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &infos[i];
    writes[i] = w;
  }
  dev->vk.vkUpdateDescriptorSets(dev->device, pipeline->bindings, writes, 0, NULL);
  VkCommandBuffer cb = dev->commands;
  dev->vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->pipeline);
  dev->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->layout, 0, 1,
                                  &set, 0, NULL);
  if (pipeline->push_bytes)
    dev->vk.vkCmdPushConstants(cb, pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               pipeline->push_bytes, push);
  dev->vk.vkCmdDispatch(cb, groups_x, groups_y, groups_z);
  /* The next dispatch (or the host, after the fence) sees every write of this one. */
  VkMemoryBarrier barrier = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_HOST_READ_BIT;
  dev->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                   VK_PIPELINE_STAGE_HOST_BIT,
                               0, 1, &barrier, 0, NULL, 0, NULL);
  dev->recorded++;
  if (dev->timestamps)
    dev->vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, dev->timestamps,
                                dev->recorded);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_vk_end(kiln_vk_device_t *dev, kiln_error_t *err) {
  kiln_error_clear(err);
  if (!dev->recording)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "vulkan: end without begin");
  dev->recording = 0;
  VkResult r = dev->vk.vkEndCommandBuffer(dev->commands);
  return r ? kiln_vk_fail(dev, r, "vkEndCommandBuffer", err) : KILN_STATUS_OK;
}

kiln_status_t kiln_vk_submit_wait(kiln_vk_device_t *dev, uint64_t timeout_ns, kiln_error_t *err) {
  kiln_error_clear(err);
  if (dev->lost)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "vulkan: device lost");
  if (dev->recording)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "vulkan: submit of a recording not ended");
  VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &dev->commands;
  VkResult r;
  if ((r = dev->vk.vkResetFences(dev->device, 1, &dev->fence)))
    return kiln_vk_fail(dev, r, "vkResetFences", err);
  if (++dev->submits == dev->lose_at_submit)
    return kiln_vk_fail(dev, VK_ERROR_DEVICE_LOST, "vkQueueSubmit", err);
  if ((r = dev->vk.vkQueueSubmit(dev->queue, 1, &submit, dev->fence)))
    return kiln_vk_fail(dev, r, "vkQueueSubmit", err);
  r = dev->vk.vkWaitForFences(dev->device, 1, &dev->fence, VK_TRUE,
                              timeout_ns ? timeout_ns : UINT64_MAX);
  return r ? kiln_vk_fail(dev, r, "vkWaitForFences", err) : KILN_STATUS_OK;
}

uint32_t kiln_vk_dispatch_times(const kiln_vk_device_t *dev, double *ns, uint32_t cap) {
  if (!dev->timestamps || dev->recorded == 0)
    return 0;
  const uint32_t n = dev->recorded < cap ? dev->recorded : cap;
  const uint64_t mask =
      dev->timestamp_bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << dev->timestamp_bits) - 1;
  uint64_t ticks[257]; /* a chunk of 256 dispatches and the timestamp before them */
  for (uint32_t at = 0; at < n; at += 256) {
    const uint32_t k = n - at < 256 ? n - at : 256;
    if (dev->vk.vkGetQueryPoolResults(dev->device, dev->timestamps, at, k + 1, sizeof ticks,
                                      ticks, sizeof ticks[0],
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT))
      return at;
    for (uint32_t i = 0; i < k; ++i) /* a counter of fewer bits wraps */
      ns[at + i] = (double)((ticks[i + 1] - ticks[i]) & mask) * dev->info.timestamp_period_ns;
  }
  return n;
}
