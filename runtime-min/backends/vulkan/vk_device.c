/* Opening a Vulkan device: the loader by dlopen, an instance (with the validation layer
 * when asked), the first device that can run kiln's kernels, one compute queue, and the
 * pools a recording draws from. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/platform/error.h"
#include "vk_internal.h"

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

static const char *result_name(VkResult r) {
  switch (r) {
  case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
  case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
  case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
  case VK_ERROR_DEVICE_LOST: return "device lost";
  case VK_ERROR_LAYER_NOT_PRESENT: return "layer not present";
  case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not present";
  case VK_ERROR_FEATURE_NOT_PRESENT: return "feature not present";
  case VK_ERROR_INCOMPATIBLE_DRIVER: return "incompatible driver";
  case VK_TIMEOUT: return "timeout";
  default: return "error";
  }
}

kiln_status_t kiln_vk_fail(kiln_vk_device_t *dev, VkResult result, const char *what,
                           kiln_error_t *err) {
  kiln_status_t status = KILN_STATUS_UNSUPPORTED;
  if (result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY)
    status = KILN_STATUS_OUT_OF_MEMORY;
  if (result == VK_ERROR_DEVICE_LOST || result == VK_TIMEOUT) {
    status = KILN_STATUS_IO_ERROR;
    if (dev && result == VK_ERROR_DEVICE_LOST)
      dev->lost = 1;
  }
  return kiln_error_set(err, status, "vulkan: %s: %s (VkResult %d)", what, result_name(result),
                        (int)result);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL count_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  kiln_vk_device_t *dev = (kiln_vk_device_t *)user;
  if (dev->validation_messages++ == 0)
    snprintf(dev->first_validation_message, sizeof dev->first_validation_message, "%s",
             data && data->pMessage ? data->pMessage : "(no text)");
  return VK_FALSE;
}

static kiln_status_t load_loader(kiln_vk_device_t *dev, const char *path, kiln_error_t *err) {
#if defined(__ANDROID__)
  const char *name = path ? path : "libvulkan.so";
#else
  const char *name = path ? path : "libvulkan.so.1";
#endif
  dev->vk.library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!dev->vk.library)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "vulkan: cannot load %s: %s", name,
                          dlerror());
  dev->vk.vkGetInstanceProcAddr =
      (PFN_vkGetInstanceProcAddr)dlsym(dev->vk.library, "vkGetInstanceProcAddr");
  if (!dev->vk.vkGetInstanceProcAddr)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "vulkan: %s has no vkGetInstanceProcAddr", name);
#define KILN_VK_LOAD_(fn)                                                                  \
  if (!(dev->vk.fn = (PFN_##fn)dev->vk.vkGetInstanceProcAddr(NULL, #fn)))                 \
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "vulkan: the loader lacks " #fn);
  KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_LOAD_)
#undef KILN_VK_LOAD_
  return KILN_STATUS_OK;
}

static int has_layer(kiln_vk_device_t *dev, const char *layer) {
  uint32_t n = 0;
  if (dev->vk.vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
    return 0;
  VkLayerProperties *props = (VkLayerProperties *)calloc(n, sizeof *props);
  int found = 0;
  if (props && dev->vk.vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; ++i)
      found = strcmp(props[i].layerName, layer) == 0;
  free(props);
  return found;
}

static kiln_status_t create_instance(kiln_vk_device_t *dev, int validation, kiln_error_t *err) {
  PFN_vkEnumerateInstanceVersion version_fn =
      (PFN_vkEnumerateInstanceVersion)dev->vk.vkGetInstanceProcAddr(NULL,
                                                                    "vkEnumerateInstanceVersion");
  uint32_t version = VK_API_VERSION_1_0;
  if (version_fn)
    version_fn(&version);
  if (version < VK_API_VERSION_1_1)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "vulkan: the loader offers Vulkan %u.%u; kiln needs 1.1",
                          VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
  if (validation && !has_layer(dev, VALIDATION_LAYER))
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "vulkan: validation asked for, but " VALIDATION_LAYER
                          " is not installed");
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kiln";
  app.pEngineName = "kiln";
  app.apiVersion = version < VK_API_VERSION_1_3 ? version : VK_API_VERSION_1_3;
  dev->instance_version = app.apiVersion;
  VkDebugUtilsMessengerCreateInfoEXT messenger = {
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = count_message;
  messenger.pUserData = dev;
  const char *layers[] = {VALIDATION_LAYER};
  const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkInstanceCreateInfo info = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  if (validation) {
    info.pNext = &messenger; /* also counts what instance creation reports */
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
  }
  VkResult r = dev->vk.vkCreateInstance(&info, NULL, &dev->instance);
  if (r != VK_SUCCESS)
    return kiln_vk_fail(dev, r, "vkCreateInstance", err);
#define KILN_VK_LOAD_(fn)                                                                  \
  if (!(dev->vk.fn = (PFN_##fn)dev->vk.vkGetInstanceProcAddr(dev->instance, #fn)))        \
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "vulkan: the instance lacks " #fn);
  KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_LOAD_)
  if (validation) {
    KILN_VK_LOAD_(vkCreateDebugUtilsMessengerEXT)
    KILN_VK_LOAD_(vkDestroyDebugUtilsMessengerEXT)
    r = dev->vk.vkCreateDebugUtilsMessengerEXT(dev->instance, &messenger, NULL, &dev->messenger);
    if (r != VK_SUCCESS)
      return kiln_vk_fail(dev, r, "vkCreateDebugUtilsMessengerEXT", err);
  }
#undef KILN_VK_LOAD_
  return KILN_STATUS_OK;
}

/* The device's facts into dev->info; 0 when it cannot run the kernels (why in `why`). */
static int describe(kiln_vk_device_t *dev, VkPhysicalDevice pd, uint32_t *family,
                    char *why, size_t why_size) {
  kiln_vk_device_info_t *info = &dev->info;
  memset(info, 0, sizeof *info);
  VkPhysicalDeviceSubgroupProperties subgroup = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceVulkan13Properties p13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  dev->vk.vkGetPhysicalDeviceProperties(pd, &props.properties);
  /* 1.3 features and properties where both the device and the instance are 1.3. */
  const int v13 = props.properties.apiVersion >= VK_API_VERSION_1_3 &&
                  dev->instance_version >= VK_API_VERSION_1_3;
  if (v13)
    subgroup.pNext = &p13;
  dev->vk.vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceProperties *p = &props.properties;
  snprintf(info->name, sizeof info->name, "%s", p->deviceName);
  info->api_version = p->apiVersion;
  info->vendor_id = p->vendorID;
  info->device_id = p->deviceID;
  info->subgroup_size = subgroup.subgroupSize;
  info->max_shared_memory_bytes = p->limits.maxComputeSharedMemorySize;
  info->max_storage_buffer_range = p->limits.maxStorageBufferRange;
  info->min_storage_buffer_offset_alignment = p->limits.minStorageBufferOffsetAlignment;
  info->timestamp_period_ns = p->limits.timestampPeriod;
  info->cpu_device = p->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;

  VkPhysicalDeviceVulkan11Features f11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceFeatures2 features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  /* The per-version structs exist only from the version that defines them (on both the
   * device and the instance, as the features enabled at create). */
  const int v12 = p->apiVersion >= VK_API_VERSION_1_2 &&
                  dev->instance_version >= VK_API_VERSION_1_2;
  if (v12) {
    features.pNext = &f11;
    f11.pNext = &f12;
    if (v13)
      f12.pNext = &f13;
  }
  dev->vk.vkGetPhysicalDeviceFeatures2(pd, &features);
  info->storage_16bit = f11.storageBuffer16BitAccess;
  info->fp16_arithmetic = f12.shaderFloat16;
  info->int8_arithmetic = f12.shaderInt8;
  info->storage_8bit = f12.storageBuffer8BitAccess;
  info->integer_dot = f13.shaderIntegerDotProduct;
  info->integer_dot_accelerated =
      info->integer_dot && p13.integerDotProduct4x8BitPackedSignedAccelerated &&
      p13.integerDotProduct4x8BitPackedMixedSignednessAccelerated;

  const VkSubgroupFeatureFlags arithmetic =
      VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  info->subgroup_arithmetic = (subgroup.supportedOperations & arithmetic) == arithmetic &&
                              (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  uint32_t n = 0;
  dev->vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
  VkQueueFamilyProperties families[16];
  if (n > 16)
    n = 16;
  dev->vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families);
  for (uint32_t i = 0; i < n; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      *family = i;
      info->timestamps = families[i].timestampValidBits > 0 && p->limits.timestampPeriod > 0;
      dev->timestamp_bits = families[i].timestampValidBits;
      return 1;
    }
  snprintf(why, why_size, "%s has no compute queue", info->name);
  return 0;
}

static kiln_status_t pick_device(kiln_vk_device_t *dev, int32_t index, kiln_error_t *err) {
  uint32_t n = 0;
  VkResult r = dev->vk.vkEnumeratePhysicalDevices(dev->instance, &n, NULL);
  if (r != VK_SUCCESS)
    return kiln_vk_fail(dev, r, "vkEnumeratePhysicalDevices", err);
  if (n == 0)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "vulkan: no device");
  VkPhysicalDevice devices[16];
  if (n > 16)
    n = 16;
  r = dev->vk.vkEnumeratePhysicalDevices(dev->instance, &n, devices);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE)
    return kiln_vk_fail(dev, r, "vkEnumeratePhysicalDevices", err);
  if (index >= (int32_t)n)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE,
                          "vulkan: device %d asked for, %u present", (int)index, n);
  char why[320] = "";
  for (uint32_t i = index < 0 ? 0 : (uint32_t)index; i < n; ++i) {
    if (describe(dev, devices[i], &dev->queue_family, why, sizeof why)) {
      dev->physical = devices[i];
      return KILN_STATUS_OK;
    }
    if (index >= 0)
      break;
  }
  return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "vulkan: %s", why);
}

static kiln_status_t create_device(kiln_vk_device_t *dev, kiln_error_t *err) {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = dev->queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkDeviceCreateInfo info = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  /* What kernel variants may use (linear_dot.comp, matmul_f16.comp); describe() set them
   * only where the 1.2 / 1.3 structs exist. */
  VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  f12.shaderFloat16 = VK_TRUE;
  f13.shaderIntegerDotProduct = VK_TRUE;
  const void **tail = &info.pNext;
  if (dev->info.fp16_arithmetic) {
    *tail = &f12;
    tail = (const void **)&f12.pNext;
  }
  if (dev->info.integer_dot)
    *tail = &f13;
  VkResult r = dev->vk.vkCreateDevice(dev->physical, &info, NULL, &dev->device);
  if (r != VK_SUCCESS)
    return kiln_vk_fail(dev, r, "vkCreateDevice", err);
  PFN_vkGetDeviceProcAddr get = dev->vk.vkGetDeviceProcAddr;
#define KILN_VK_LOAD_(fn)                                                                  \
  if (!(dev->vk.fn = (PFN_##fn)get(dev->device, #fn)))                                     \
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "vulkan: the device lacks " #fn);
  KILN_VK_DEVICE_FUNCTIONS(KILN_VK_LOAD_)
#undef KILN_VK_LOAD_
  dev->vk.vkGetDeviceQueue(dev->device, dev->queue_family, 0, &dev->queue);
  dev->vk.vkGetPhysicalDeviceMemoryProperties(dev->physical, &dev->memory);

  VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               dev->max_dispatches * KILN_VK_MAX_BINDINGS};
  VkDescriptorPoolCreateInfo pool = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool.maxSets = dev->max_dispatches;
  pool.poolSizeCount = 1;
  pool.pPoolSizes = &size;
  if ((r = dev->vk.vkCreateDescriptorPool(dev->device, &pool, NULL, &dev->descriptor_pool)))
    return kiln_vk_fail(dev, r, "vkCreateDescriptorPool", err);
  VkCommandPoolCreateInfo cpool = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpool.queueFamilyIndex = dev->queue_family;
  if ((r = dev->vk.vkCreateCommandPool(dev->device, &cpool, NULL, &dev->command_pool)))
    return kiln_vk_fail(dev, r, "vkCreateCommandPool", err);
  VkCommandBufferAllocateInfo cb = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb.commandPool = dev->command_pool;
  cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb.commandBufferCount = 1;
  if ((r = dev->vk.vkAllocateCommandBuffers(dev->device, &cb, &dev->commands)))
    return kiln_vk_fail(dev, r, "vkAllocateCommandBuffers", err);
  VkFenceCreateInfo fence = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if ((r = dev->vk.vkCreateFence(dev->device, &fence, NULL, &dev->fence)))
    return kiln_vk_fail(dev, r, "vkCreateFence", err);
  if (dev->info.timestamps) {
    VkQueryPoolCreateInfo q = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    q.queryType = VK_QUERY_TYPE_TIMESTAMP;
    q.queryCount = dev->max_dispatches + 1;
    if ((r = dev->vk.vkCreateQueryPool(dev->device, &q, NULL, &dev->timestamps)))
      return kiln_vk_fail(dev, r, "vkCreateQueryPool", err);
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_vk_device_open(const kiln_vk_options_t *options, kiln_vk_device_t **out,
                                  kiln_error_t *err) {
  kiln_error_clear(err);
  if (!out)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "vulkan: out is NULL");
  *out = NULL;
  kiln_vk_options_t opts = {0, -1, NULL, 0};
  if (options)
    opts = *options;
  if (opts.max_dispatches == 0)
    opts.max_dispatches = 1024;
  if (opts.max_dispatches > (1u << 20))
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE,
                          "vulkan: max_dispatches %u is more than 2^20", opts.max_dispatches);
  kiln_vk_device_t *dev = (kiln_vk_device_t *)calloc(1, sizeof *dev);
  if (!dev)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  dev->max_dispatches = opts.max_dispatches;
  dev->lose_at_submit = opts.lose_device_at_submit;
  kiln_status_t s = load_loader(dev, opts.loader_path, err);
  if (!s)
    s = create_instance(dev, opts.validation, err);
  if (!s)
    s = pick_device(dev, opts.device_index, err);
  if (!s)
    s = create_device(dev, err);
  if (s) {
    kiln_vk_device_close(dev);
    return s;
  }
  *out = dev;
  return KILN_STATUS_OK;
}

void kiln_vk_device_close(kiln_vk_device_t *dev) {
  if (!dev)
    return;
  if (dev->device) {
    dev->vk.vkDeviceWaitIdle(dev->device);
    if (dev->timestamps)
      dev->vk.vkDestroyQueryPool(dev->device, dev->timestamps, NULL);
    if (dev->fence)
      dev->vk.vkDestroyFence(dev->device, dev->fence, NULL);
    if (dev->command_pool)
      dev->vk.vkDestroyCommandPool(dev->device, dev->command_pool, NULL);
    if (dev->descriptor_pool)
      dev->vk.vkDestroyDescriptorPool(dev->device, dev->descriptor_pool, NULL);
    dev->vk.vkDestroyDevice(dev->device, NULL);
  }
  if (dev->messenger)
    dev->vk.vkDestroyDebugUtilsMessengerEXT(dev->instance, dev->messenger, NULL);
  if (dev->instance)
    dev->vk.vkDestroyInstance(dev->instance, NULL);
  if (dev->vk.library)
    dlclose(dev->vk.library);
  free(dev);
}

const kiln_vk_device_info_t *kiln_vk_device_info(const kiln_vk_device_t *dev) {
  return &dev->info;
}

uint64_t kiln_vk_validation_messages(const kiln_vk_device_t *dev) {
  return dev->validation_messages;
}

const char *kiln_vk_first_validation_message(const kiln_vk_device_t *dev) {
  return dev->first_validation_message;
}
