/* The Vulkan entry points kiln's backend calls, listed once: the loader (vk_device.c) fills
 * a table from this list at run time, so nothing links against libvulkan. Internal. */
#ifndef KILN_VK_FUNCTIONS_H_
#define KILN_VK_FUNCTIONS_H_

/* Before an instance exists. */
#define KILN_VK_GLOBAL_FUNCTIONS(X)                                                        \
  X(vkCreateInstance)                                                                      \
  X(vkEnumerateInstanceLayerProperties)                                                    \
  X(vkEnumerateInstanceExtensionProperties)

/* Through vkGetInstanceProcAddr(instance, ...). */
#define KILN_VK_INSTANCE_FUNCTIONS(X)                                                      \
  X(vkDestroyInstance)                                                                     \
  X(vkEnumeratePhysicalDevices)                                                            \
  X(vkGetPhysicalDeviceProperties)                                                         \
  X(vkGetPhysicalDeviceProperties2)                                                        \
  X(vkGetPhysicalDeviceFeatures2)                                                          \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                              \
  X(vkGetPhysicalDeviceMemoryProperties)                                                   \
  X(vkEnumerateDeviceExtensionProperties)                                                  \
  X(vkCreateDevice)                                                                        \
  X(vkGetDeviceProcAddr)

/* Through vkGetDeviceProcAddr(device, ...). */
#define KILN_VK_DEVICE_FUNCTIONS(X)                                                        \
  X(vkDestroyDevice)                                                                       \
  X(vkGetDeviceQueue)                                                                      \
  X(vkDeviceWaitIdle)                                                                      \
  X(vkCreateBuffer)                                                                        \
  X(vkDestroyBuffer)                                                                       \
  X(vkGetBufferMemoryRequirements)                                                         \
  X(vkAllocateMemory)                                                                      \
  X(vkFreeMemory)                                                                          \
  X(vkBindBufferMemory)                                                                    \
  X(vkMapMemory)                                                                           \
  X(vkUnmapMemory)                                                                         \
  X(vkCreateShaderModule)                                                                  \
  X(vkDestroyShaderModule)                                                                 \
  X(vkCreateDescriptorSetLayout)                                                           \
  X(vkDestroyDescriptorSetLayout)                                                          \
  X(vkCreatePipelineLayout)                                                                \
  X(vkDestroyPipelineLayout)                                                               \
  X(vkCreateComputePipelines)                                                              \
  X(vkDestroyPipeline)                                                                     \
  X(vkCreateDescriptorPool)                                                                \
  X(vkDestroyDescriptorPool)                                                               \
  X(vkResetDescriptorPool)                                                                 \
  X(vkAllocateDescriptorSets)                                                              \
  X(vkUpdateDescriptorSets)                                                                \
  X(vkCreateCommandPool)                                                                   \
  X(vkDestroyCommandPool)                                                                  \
  X(vkAllocateCommandBuffers)                                                              \
  X(vkResetCommandBuffer)                                                                  \
  X(vkBeginCommandBuffer)                                                                  \
  X(vkEndCommandBuffer)                                                                    \
  X(vkCmdBindPipeline)                                                                     \
  X(vkCmdBindDescriptorSets)                                                               \
  X(vkCmdPushConstants)                                                                    \
  X(vkCmdDispatch)                                                                         \
  X(vkCmdPipelineBarrier)                                                                  \
  X(vkCmdWriteTimestamp)                                                                   \
  X(vkCmdResetQueryPool)                                                                   \
  X(vkCreateQueryPool)                                                                     \
  X(vkDestroyQueryPool)                                                                    \
  X(vkGetQueryPoolResults)                                                                 \
  X(vkCreateFence)                                                                         \
  X(vkDestroyFence)                                                                        \
  X(vkResetFences)                                                                         \
  X(vkWaitForFences)                                                                       \
  X(vkQueueSubmit)

#endif /* KILN_VK_FUNCTIONS_H_ */
