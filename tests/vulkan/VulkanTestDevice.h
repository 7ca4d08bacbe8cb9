// One validated Vulkan device for the Vulkan tests (lavapipe in ctest), and helpers that
// build a pipeline from an embedded kernel, upload vectors and run one recording. Every
// test ends by checking that the validation layer reported nothing.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "codegen/vulkan/vk_kernels.h"
#include "vk_device.h"
}

namespace kiln::vktest {

struct BufferDeleter {
  void operator()(kiln_vk_buffer_t *b) const { kiln_vk_buffer_destroy(b); }
};
struct PipelineDeleter {
  void operator()(kiln_vk_pipeline_t *p) const { kiln_vk_pipeline_destroy(p); }
};
using Buffer = std::unique_ptr<kiln_vk_buffer_t, BufferDeleter>;
using Pipeline = std::unique_ptr<kiln_vk_pipeline_t, PipelineDeleter>;

class VulkanTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (dev_)
      return;
    kiln_vk_options_t options = {1, -1, nullptr, 0};
    kiln_error_t err;
    if (kiln_vk_device_open(&options, &dev_, &err) != KILN_STATUS_OK) {
      openError_ = err.message;
      dev_ = nullptr;
    }
  }
  void SetUp() override {
    ASSERT_NE(dev_, nullptr) << "no Vulkan device: " << openError_;
    messagesBefore_ = kiln_vk_validation_messages(dev_);
  }
  void TearDown() override {
    if (dev_) {
      EXPECT_EQ(kiln_vk_validation_messages(dev_), messagesBefore_)
          << "validation layer: " << kiln_vk_first_validation_message(dev_);
    }
  }

  static kiln_vk_device_t *dev() { return dev_; }
  // For a test that provokes messages on purpose: they do not fail it.
  void acceptValidationMessages() { messagesBefore_ = kiln_vk_validation_messages(dev_); }

  template <typename T> Buffer upload(const std::vector<T> &data, size_t minBytes = 4) {
    size_t bytes = std::max(minBytes, data.size() * sizeof(T));
    bytes = (bytes + 3) & ~size_t(3);
    kiln_vk_buffer_t *b = nullptr;
    kiln_error_t err;
    EXPECT_EQ(kiln_vk_buffer_create(dev_, bytes, &b, &err), KILN_STATUS_OK) << err.message;
    if (b) {
      std::memset(kiln_vk_buffer_data(b), 0, bytes);
      if (!data.empty())
        std::memcpy(kiln_vk_buffer_data(b), data.data(), data.size() * sizeof(T));
    }
    return Buffer(b);
  }

  template <typename T> std::vector<T> download(kiln_vk_buffer_t *b, size_t count) {
    std::vector<T> out(count);
    std::memcpy(out.data(), kiln_vk_buffer_data(b), count * sizeof(T));
    return out;
  }

  Pipeline pipeline(const char *kernel, uint32_t bindings, uint32_t pushBytes,
                    std::vector<uint32_t> spec) {
    const kiln_vk_kernel_t *k = kiln_vk_kernel_find(kernel);
    EXPECT_NE(k, nullptr) << kernel;
    if (!k)
      return nullptr;
    kiln_vk_pipeline_desc_t desc = {kernel, k->words, *k->word_count, bindings, pushBytes,
                                    spec.data(), (uint32_t)spec.size()};
    kiln_vk_pipeline_t *p = nullptr;
    kiln_error_t err;
    EXPECT_EQ(kiln_vk_pipeline_create(dev_, &desc, &p, &err), KILN_STATUS_OK) << err.message;
    return Pipeline(p);
  }

  // Records one dispatch, submits it and waits.
  template <typename Push>
  void run(kiln_vk_pipeline_t *p, std::vector<kiln_vk_buffer_t *> buffers, const Push &push,
           uint32_t gx, uint32_t gy = 1) {
    ASSERT_NE(p, nullptr);
    kiln_error_t err;
    ASSERT_EQ(kiln_vk_begin(dev_, &err), KILN_STATUS_OK) << err.message;
    ASSERT_EQ(kiln_vk_dispatch(dev_, p, buffers.data(), &push, gx, gy, 1, &err), KILN_STATUS_OK)
        << err.message;
    ASSERT_EQ(kiln_vk_end(dev_, &err), KILN_STATUS_OK) << err.message;
    ASSERT_EQ(kiln_vk_submit_wait(dev_, 0, &err), KILN_STATUS_OK) << err.message;
  }

  static uint32_t groups(uint64_t n, uint32_t per) { return (uint32_t)((n + per - 1) / per); }

private:
  static inline kiln_vk_device_t *dev_ = nullptr;
  static inline std::string openError_;
  uint64_t messagesBefore_ = 0;
};

// Deterministic values in [-1, 1).
inline std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto &x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = (float)((int64_t)(s >> 40) - (1 << 23)) / (float)(1 << 23);
  }
  return v;
}

} // namespace kiln::vktest
