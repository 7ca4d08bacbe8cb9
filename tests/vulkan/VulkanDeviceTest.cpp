// The device layer: what it reports, its errors on bad input, and re-submitted recordings
// with per-dispatch timestamps.
#include "VulkanTestDevice.h"

#include "codegen/vulkan/GpuProgram.h"

extern "C" {
#include "vk_internal.h"
#include "vk_placement.h"
#include "vk_program.h"
}

namespace kiln::vktest {
namespace {

TEST_F(VulkanTest, DeviceReportsWhatTheKernelsNeed) {
  const kiln_vk_device_info_t *info = kiln_vk_device_info(dev());
  EXPECT_STRNE(info->name, "");
  EXPECT_GE(info->api_version, (1u << 22) | (1u << 12)); // 1.1
  EXPECT_GE(info->subgroup_size, 1u);
  EXPECT_GE(info->max_shared_memory_bytes, 16384u); // Vulkan's minimum
  RecordProperty("device", info->name);
  std::printf("device: %s, subgroup %u, shared %u B, fp16 %d, int8 %d, int-dot %d, "
              "timestamps %d\n",
              info->name, info->subgroup_size, info->max_shared_memory_bytes,
              info->fp16_arithmetic, info->int8_arithmetic, info->integer_dot, info->timestamps);
}

TEST_F(VulkanTest, AbsurdBufferIsOutOfMemory) {
  kiln_vk_buffer_t *b = nullptr;
  kiln_error_t err;
  EXPECT_EQ(kiln_vk_buffer_create(dev(), uint64_t(1) << 50, &b, &err), KILN_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(b, nullptr);
  EXPECT_NE(std::string(err.message).find("memory"), std::string::npos) << err.message;
  EXPECT_EQ(kiln_vk_buffer_create(dev(), 6, &b, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_vk_buffer_create(dev(), 0, &b, &err), KILN_STATUS_INVALID_ARGUMENT);
}

// The count every test checks is live: an invalid call (a zero-sized buffer) is counted.
TEST_F(VulkanTest, ValidationLayerCountsAnInvalidCall) {
  kiln_vk_device_t *d = dev();
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = 0; // VUID-VkBufferCreateInfo-size-00912
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  const uint64_t before = kiln_vk_validation_messages(d);
  if (d->vk.vkCreateBuffer(d->device, &info, nullptr, &buffer) == VK_SUCCESS && buffer)
    d->vk.vkDestroyBuffer(d->device, buffer, nullptr);
  EXPECT_GT(kiln_vk_validation_messages(d), before);
  EXPECT_NE(std::string(kiln_vk_first_validation_message(d)).find("00912"), std::string::npos)
      << kiln_vk_first_validation_message(d);
  acceptValidationMessages();
}

TEST_F(VulkanTest, BadPipelinesAreRefused) {
  const uint32_t garbage[8] = {0xdeadbeef, 1, 2, 3, 4, 5, 6, 7};
  kiln_vk_pipeline_desc_t desc = {"garbage", garbage, 8, 1, 4, nullptr, 0};
  kiln_vk_pipeline_t *p = nullptr;
  kiln_error_t err;
  EXPECT_EQ(kiln_vk_pipeline_create(dev(), &desc, &p, &err), KILN_STATUS_CORRUPT);
  EXPECT_NE(std::string(err.message).find("not a SPIR-V module"), std::string::npos);
  const kiln_vk_kernel_t *k = kiln_vk_kernel_find("eltwise");
  ASSERT_NE(k, nullptr);
  kiln_vk_pipeline_desc_t many = {"eltwise", k->words, *k->word_count, 9, 16, nullptr, 0};
  EXPECT_EQ(kiln_vk_pipeline_create(dev(), &many, &p, &err), KILN_STATUS_INVALID_ARGUMENT);
  kiln_vk_pipeline_desc_t odd = {"eltwise", k->words, *k->word_count, 3, 18, nullptr, 0};
  EXPECT_EQ(kiln_vk_pipeline_create(dev(), &odd, &p, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_vk_kernel_find("no-such-kernel"), nullptr);
}

TEST_F(VulkanTest, RecordingRulesAreErrors) {
  Pipeline p = pipeline("eltwise", 3, 16, {64, 0});
  auto a = upload(std::vector<float>(64, 1.0f));
  kiln_vk_buffer_t *bufs[3] = {a.get(), a.get(), a.get()};
  uint32_t push[4] = {64, 0, 0, 0};
  kiln_error_t err;
  EXPECT_EQ(kiln_vk_dispatch(dev(), p.get(), bufs, push, 1, 1, 1, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_vk_end(dev(), &err), KILN_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(kiln_vk_begin(dev(), &err), KILN_STATUS_OK);
  EXPECT_EQ(kiln_vk_dispatch(dev(), p.get(), bufs, push, 0, 1, 1, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_vk_submit_wait(dev(), 0, &err), KILN_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(kiln_vk_end(dev(), &err), KILN_STATUS_OK);
}

TEST_F(VulkanTest, MissingLoaderIsOneClearError) {
  kiln_vk_options_t options = {0, -1, "/nonexistent/libvulkan.so.1", 0};
  kiln_vk_device_t *d = nullptr;
  kiln_error_t err;
  EXPECT_EQ(kiln_vk_device_open(&options, &d, &err), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(d, nullptr);
  EXPECT_NE(std::string(err.message).find("cannot load /nonexistent/libvulkan.so.1"),
            std::string::npos)
      << err.message;
  options.loader_path = nullptr;
  options.device_index = 99;
  EXPECT_EQ(kiln_vk_device_open(&options, &d, &err), KILN_STATUS_OUT_OF_RANGE) << err.message;
}

// A recording of three dependent dispatches, submitted twice: each submission sees the
// previous one's results (x doubles per dispatch), and each dispatch has a GPU time.
TEST_F(VulkanTest, RecordingIsResubmittedWithTimestamps) {
  const uint32_t n = 1000;
  Pipeline add = pipeline("eltwise", 3, 16, {64, 0});
  auto x = upload(std::vector<float>(n, 1.0f));
  kiln_vk_buffer_t *bufs[3] = {x.get(), x.get(), x.get()};
  uint32_t push[4] = {n, 0, 0, 0};
  kiln_error_t err;
  ASSERT_EQ(kiln_vk_begin(dev(), &err), KILN_STATUS_OK);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(kiln_vk_dispatch(dev(), add.get(), bufs, push, groups(n, 64), 1, 1, &err),
              KILN_STATUS_OK);
  ASSERT_EQ(kiln_vk_end(dev(), &err), KILN_STATUS_OK);
  ASSERT_EQ(kiln_vk_submit_wait(dev(), 0, &err), KILN_STATUS_OK);
  EXPECT_EQ(download<float>(x.get(), n)[n - 1], 8.0f);
  ASSERT_EQ(kiln_vk_submit_wait(dev(), 0, &err), KILN_STATUS_OK);
  std::vector<float> y = download<float>(x.get(), n);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], 64.0f) << i;
  if (kiln_vk_device_info(dev())->timestamps) {
    double ns[4] = {-1, -1, -1, -1};
    ASSERT_EQ(kiln_vk_dispatch_times(dev(), ns, 4), 3u);
    for (int i = 0; i < 3; ++i)
      EXPECT_GE(ns[i], 0.0);
  }
}

} // namespace
} // namespace kiln::vktest

namespace kiln::vktest {
namespace {

// A one-dispatch GPU program (kiln/gpu_program.h) as the compiler writes it.
std::vector<uint32_t> tinyProgram() {
  const kiln_vk_kernel_t *k = kiln_vk_kernel_find("eltwise");
  std::vector<uint32_t> p = {KILN_GPU_MAGIC, KILN_GPU_VERSION, 1, 1, 256, 0,
                             KILN_GPU_API_VULKAN_1_1};
  p.push_back(7); // "eltwise", padded to 8 bytes
  uint32_t name[2] = {};
  std::memcpy(name, "eltwise", 7);
  p.insert(p.end(), name, name + 2);
  p.push_back(KILN_GPU_NO_KERNEL); // not a variant
  p.push_back(uint32_t(*k->word_count));
  p.insert(p.end(), k->words, k->words + *k->word_count);
  std::vector<uint32_t> dispatch = {0, KILN_GPU_WHEN_ALWAYS, 0, 2, 64, 0, 3, 1, 1, 1, 4,
                                    64, 0, 0, 0, 0, 0, 0, 0, // push (a, b) pairs
                                    64, 0, 64, 0, 1, 1, 0, 1, 1,
                                    0, 0, 0, 0, 0}; // no weights window, no offset words
  p.insert(p.end(), dispatch.begin(), dispatch.end());
  return p;
}

// A lost device (injected at the second submit, as a driver reports it) is an error on
// that submit and on every later one, and the device still closes cleanly.
TEST(VulkanDeviceLost, IsAnErrorNotACrash) {
  kiln_vk_options_t options = {1, -1, nullptr, 0, 2};
  kiln_vk_device_t *d = nullptr;
  kiln_error_t err;
  if (kiln_vk_device_open(&options, &d, &err) != KILN_STATUS_OK)
    GTEST_FAIL() << err.message;
  const kiln_vk_kernel_t *k = kiln_vk_kernel_find("eltwise");
  ASSERT_NE(k, nullptr);
  const uint32_t spec[2] = {64, 0};
  kiln_vk_pipeline_desc_t desc = {"eltwise", k->words, *k->word_count, 3, 16, spec, 2};
  kiln_vk_pipeline_t *p = nullptr;
  kiln_vk_buffer_t *x = nullptr;
  ASSERT_EQ(kiln_vk_pipeline_create(d, &desc, &p, &err), KILN_STATUS_OK) << err.message;
  ASSERT_EQ(kiln_vk_buffer_create(d, 256, &x, &err), KILN_STATUS_OK) << err.message;
  kiln_vk_buffer_t *bufs[3] = {x, x, x};
  uint32_t push[4] = {64, 0, 0, 0};
  ASSERT_EQ(kiln_vk_begin(d, &err), KILN_STATUS_OK);
  ASSERT_EQ(kiln_vk_dispatch(d, p, bufs, push, 1, 1, 1, &err), KILN_STATUS_OK);
  ASSERT_EQ(kiln_vk_end(d, &err), KILN_STATUS_OK);
  EXPECT_EQ(kiln_vk_submit_wait(d, 0, &err), KILN_STATUS_OK) << err.message;
  EXPECT_EQ(kiln_vk_submit_wait(d, 0, &err), KILN_STATUS_IO_ERROR);
  EXPECT_NE(std::string(err.message).find("device lost"), std::string::npos) << err.message;
  EXPECT_EQ(kiln_vk_submit_wait(d, 0, &err), KILN_STATUS_IO_ERROR);
  EXPECT_STREQ(err.message, "vulkan: device lost");
  EXPECT_EQ(kiln_vk_validation_messages(d), 0u) << kiln_vk_first_validation_message(d);
  kiln_vk_buffer_destroy(x);
  kiln_vk_pipeline_destroy(p);
  kiln_vk_device_close(d);
}

TEST(VulkanProgram, ReadsWhatTheCompilerWrites) {
  std::vector<uint32_t> p = tinyProgram();
  kiln_vk_program_t prog;
  kiln_error_t err;
  ASSERT_EQ(kiln_vk_program_read((const uint8_t *)p.data(), p.size() * 4, &prog, &err),
            KILN_STATUS_OK)
      << err.message;
  EXPECT_EQ(prog.n_kernels, 1u);
  EXPECT_STREQ(prog.kernels[0].name, "eltwise");
  ASSERT_EQ(prog.n_steps, 1u);
  EXPECT_EQ(prog.gpu_scratch_bytes, 256u);
  EXPECT_EQ(kiln_vk_value_at(prog.steps[0].push[0], 5), 5u * 64u);
  EXPECT_EQ(kiln_vk_groups_at(prog.steps[0].groups[0], 5), 5u);
  kiln_vk_program_free(&prog);
}

// Every truncation and each bad field is one error, never a read past the section.
TEST(VulkanProgram, CorruptSectionsAreErrors) {
  const std::vector<uint32_t> good = tinyProgram();
  kiln_vk_program_t prog;
  kiln_error_t err;
  for (size_t words = 0; words < good.size(); ++words) {
    std::vector<uint32_t> cut(good.begin(), good.begin() + words);
    EXPECT_NE(kiln_vk_program_read((const uint8_t *)cut.data(), words * 4, &prog, &err),
              KILN_STATUS_OK)
        << words << " words";
  }
  const size_t dispatchAt = good.size() - 33;
  struct Edit {
    size_t at;
    uint32_t value;
    const char *message;
  } edits[] = {{0, 0, "bad magic"},
               {1, 1, "version 1"},
               {10, 0, "bad variant"},
               {6, 9, "API 9"},
               {dispatchAt, 1, "no such kernel"},
               {dispatchAt + 1, 3, "bad batch condition"},
               {dispatchAt + 7, KILN_GPU_BUF_COUNT, "names no buffer"},
               {good.size() - 12, 0, "bad group count"},
               {good.size() - 5, 1, "bad weights window"}, // lo 1 past hi 0
               {good.size() - 1, 5, "bad offset word count"}}; // 4 push words
  for (const Edit &e : edits) {
    std::vector<uint32_t> bad = good;
    bad[e.at] = e.value;
    EXPECT_NE(kiln_vk_program_read((const uint8_t *)bad.data(), bad.size() * 4, &prog, &err),
              KILN_STATUS_OK);
    EXPECT_NE(std::string(err.message).find(e.message), std::string::npos) << err.message;
  }
  std::vector<uint32_t> longer = good;
  longer.push_back(0);
  EXPECT_EQ(kiln_vk_program_read((const uint8_t *)longer.data(), longer.size() * 4, &prog, &err),
            KILN_STATUS_CORRUPT);
  EXPECT_NE(std::string(err.message).find("after the last dispatch"), std::string::npos);
}

// An op compiled for the CPU only is a step with no kernel and nothing bound: it reads,
// places its op on the CPU whatever the device has, and says so; a binding on it is corrupt.
TEST(VulkanProgram, CpuOnlyStepsArePlacedOnTheCpu) {
  std::vector<uint32_t> p = tinyProgram();
  p[3] = 2; // dispatches
  const std::vector<uint32_t> cpuStep = {KILN_GPU_NO_KERNEL, KILN_GPU_WHEN_ALWAYS, 1, 0, 0, 0,
                                         0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0};
  p.insert(p.end(), cpuStep.begin(), cpuStep.end());
  kiln_vk_program_t prog;
  kiln_error_t err;
  ASSERT_EQ(kiln_vk_program_read((const uint8_t *)p.data(), p.size() * 4, &prog, &err),
            KILN_STATUS_OK)
      << err.message;
  kiln_vk_device_info_t info{};
  info.subgroup_arithmetic = 1;
  info.integer_dot = 1;
  const kiln_vk_place_options_t o = {0, 0, 0};
  kiln_vk_placement_t pl;
  ASSERT_EQ(kiln_vk_place(&prog, &info, &o, &pl, &err), KILN_STATUS_OK);
  EXPECT_EQ(pl.on_gpu[KILN_VK_DECODE][0], 1);
  EXPECT_EQ(pl.on_gpu[KILN_VK_DECODE][1], 0);
  EXPECT_EQ(pl.on_gpu[KILN_VK_PREFILL][1], 0);
  EXPECT_EQ(pl.all_gpu[KILN_VK_DECODE], 0);
  char text[512];
  kiln_vk_placement_text(&pl, &prog, text, sizeof text);
  EXPECT_NE(std::string(text).find("decode: 1 of 2 ops on the GPU, 1 on the CPU (compiled for "
                                   "the CPU only"),
            std::string::npos)
      << text;
  kiln_vk_placement_free(&pl);
  kiln_vk_program_free(&prog);
  std::vector<uint32_t> bound = p;
  bound[bound.size() - 16] = 1; // the CPU step's binding count
  EXPECT_EQ(kiln_vk_program_read((const uint8_t *)bound.data(), bound.size() * 4, &prog, &err),
            KILN_STATUS_CORRUPT);
}

// Weights larger than a binding may span: each step binds the window it reads (its offset
// words move with the window's base), and a step whose window is larger runs on the CPU.
TEST(VulkanProgram, WeightsWindowsAndOversizedSteps) {
  std::vector<uint32_t> p = tinyProgram();
  p[3] = 2;
  std::vector<uint32_t> second(p.end() - 33, p.end());
  second[2] = 1; // op 1
  // the first step reads bytes [1000, 1200), push word 1 an offset into them as a float
  // index; the second reads [0, 5000)
  const size_t first = p.size() - 5;
  p[first] = 1000;
  p[first + 2] = 1200;
  p[first + 4] = 1;
  p.insert(p.end(), {1u, 4u});
  second[second.size() - 3] = 5000;
  p.insert(p.end(), second.begin(), second.end());
  kiln_vk_program_t prog;
  kiln_error_t err;
  ASSERT_EQ(kiln_vk_program_read((const uint8_t *)p.data(), p.size() * 4, &prog, &err),
            KILN_STATUS_OK)
      << err.message;
  EXPECT_EQ(prog.steps[0].weights_lo, 1000u);
  EXPECT_EQ(prog.steps[0].weights_hi, 1200u);
  ASSERT_EQ(prog.steps[0].n_offsets, 1u);
  EXPECT_EQ(prog.steps[0].offset_word[0], 1u);
  EXPECT_EQ(prog.steps[0].offset_divisor[0], 4u);
  EXPECT_EQ(prog.steps[1].weights_hi, 5000u);
  kiln_vk_device_info_t info{};
  info.subgroup_arithmetic = 1;
  info.max_storage_buffer_range = 1u << 30;
  info.min_storage_buffer_offset_alignment = 256;
  kiln_vk_placement_t pl;
  // 8,192 bytes of weights, a binding of at most 4,096 (the test knob below the device's)
  kiln_vk_place_options_t o = {0, 0, 0, 8192, 4096};
  ASSERT_EQ(kiln_vk_place(&prog, &info, &o, &pl, &err), KILN_STATUS_OK);
  ASSERT_TRUE(pl.windowed);
  uint64_t base, range;
  kiln_vk_window(&pl, &prog.steps[0], &base, &range);
  EXPECT_EQ(base, 768u); // 1000 down to a multiple of 256
  EXPECT_EQ(range, 432u);
  EXPECT_EQ(pl.on_gpu[KILN_VK_DECODE][0], 1);
  EXPECT_EQ(pl.on_gpu[KILN_VK_DECODE][1], 0); // 5,000 bytes in one dispatch
  char text[512];
  kiln_vk_placement_text(&pl, &prog, text, sizeof text);
  EXPECT_NE(std::string(text).find("decode: 1 of 2 ops on the GPU, 1 on the CPU (one "
                                   "dispatch's weights exceed the 4096 bytes"),
            std::string::npos)
      << text;
  kiln_vk_placement_free(&pl);
  o.weights_size = 4096; // fits one binding: bound whole, nothing oversized
  ASSERT_EQ(kiln_vk_place(&prog, &info, &o, &pl, &err), KILN_STATUS_OK);
  EXPECT_FALSE(pl.windowed);
  EXPECT_EQ(pl.on_gpu[KILN_VK_DECODE][1], 1);
  kiln_vk_placement_free(&pl);
  kiln_vk_program_free(&prog);
  std::vector<uint32_t> bad = p;
  bad[first + 5] = 4; // offset word 4 of 4 push words
  EXPECT_EQ(kiln_vk_program_read((const uint8_t *)bad.data(), bad.size() * 4, &prog, &err),
            KILN_STATUS_CORRUPT);
  EXPECT_NE(std::string(err.message).find("bad offset word"), std::string::npos);
}

// The compiler's writer and the runtime's reader agree on each dispatch's weights window:
// a whole weight from its offset to its end, or the rows a split linear reads.
TEST(VulkanProgram, WindowsAsTheCompilerWritesThem) {
  using namespace kiln::codegen::vulkan;
  GpuProgram program;
  for (uint32_t r0 : {0u, 64u}) {
    Dispatch d;
    d.kernel = "linear";
    d.constants = {64, 0, 2, 1};
    d.bindings = {KILN_GPU_BUF_WEIGHTS, KILN_GPU_BUF_SCRATCH, KILN_GPU_BUF_LOGITS,
                  KILN_GPU_BUF_SCRATCH};
    PushWord stride, from;
    stride.ref = PushWord::Ref::Stride;
    from.ref = PushWord::Ref::Offset;
    stride.weight = from.weight = "out";
    from.rows = r0;
    from.windowRows = r0 ? 64 : 0;
    d.push = {PushWord{}, PushWord{}, stride, from};
    d.op = 0;
    program.dispatches.push_back(d);
  }
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(serialize(program,
                        [](const std::string &) {
                          return std::optional<StoredWeight>(StoredWeight{1000, 256, 51200, 0});
                        },
                        bytes, error))
      << error;
  kiln_vk_program_t prog;
  kiln_error_t err;
  ASSERT_EQ(kiln_vk_program_read(bytes.data(), bytes.size(), &prog, &err), KILN_STATUS_OK)
      << err.message;
  ASSERT_EQ(prog.n_steps, 2u);
  EXPECT_EQ(prog.steps[0].weights_lo, 1000u); // the whole weight
  EXPECT_EQ(prog.steps[0].weights_hi, 52200u);
  EXPECT_EQ(prog.steps[1].weights_lo, 1000u + 64 * 256); // rows 64..127
  EXPECT_EQ(prog.steps[1].weights_hi, 1000u + 128 * 256);
  EXPECT_EQ(kiln_vk_value_at(prog.steps[1].push[3], 1), 1000u + 64 * 256);
  ASSERT_EQ(prog.steps[1].n_offsets, 1u);
  EXPECT_EQ(prog.steps[1].offset_word[0], 3u);
  EXPECT_EQ(prog.steps[1].offset_divisor[0], 1u);
  kiln_vk_program_free(&prog);
}

} // namespace
} // namespace kiln::vktest
