/* The device's state, shared by the files of the Vulkan device layer. Internal. */
#ifndef KILN_VK_INTERNAL_H_
#define KILN_VK_INTERNAL_H_

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "vk_device.h"
#include "vk_functions.h"

#define KILN_VK_MAX_BINDINGS 8u

typedef struct kiln_vk_api {
  void *library;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT;
#define KILN_VK_FIELD_(name) PFN_##name name;
  KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_FIELD_)
  KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_FIELD_)
  KILN_VK_DEVICE_FUNCTIONS(KILN_VK_FIELD_)
#undef KILN_VK_FIELD_
} kiln_vk_api_t;

struct kiln_vk_device {
  kiln_vk_api_t vk;
  kiln_vk_device_info_t info;
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  VkPhysicalDeviceMemoryProperties memory;
  VkDescriptorPool descriptor_pool;
  VkCommandPool command_pool;
  VkCommandBuffer commands;
  VkFence fence;
  VkQueryPool timestamps; /* max_dispatches + 1 slots, or VK_NULL_HANDLE */
  uint32_t timestamp_bits; /* the queue's timestampValidBits */
  uint32_t max_dispatches;
  uint32_t recorded;      /* dispatches in the current recording */
  int recording;          /* between begin and end */
  int lost;
  uint32_t instance_version; /* the apiVersion the instance was created with */
  uint32_t submits, lose_at_submit; /* kiln_vk_options_t.lose_device_at_submit */
  uint64_t validation_messages;
  char first_validation_message[512];
};

struct kiln_vk_buffer {
  kiln_vk_device_t *dev;
  VkBuffer buffer;
  VkDeviceMemory memory;
  void *data;
  uint64_t size;
};

struct kiln_vk_pipeline {
  kiln_vk_device_t *dev;
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout layout;
  VkPipeline pipeline;
  uint32_t bindings;
  uint32_t push_bytes;
};

/* A VkResult as kiln's error: out-of-memory codes as KILN_STATUS_OUT_OF_MEMORY, a lost
 * device as KILN_STATUS_IO_ERROR (and dev->lost), anything else as UNSUPPORTED. */
kiln_status_t kiln_vk_fail(kiln_vk_device_t *dev, VkResult result, const char *what,
                           kiln_error_t *err);

#endif /* KILN_VK_INTERNAL_H_ */
