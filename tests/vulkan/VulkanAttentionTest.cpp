// kv_store + attention against kiln_uk_attention's contract: a prefill batch (each token
// sees the rows of the tokens before it in the same batch), then a decode step at the next
// position, with f32 and f16 caches and grouped query heads.
#include "VulkanTestDevice.h"

#include <cmath>

extern "C" {
#include "kiln/quant.h"
}

namespace kiln::vktest {
namespace {

struct KvPush {
  uint32_t n, kvWidth, kOffset, vOffset, kCache, vCache, posOffset;
};
struct AttnPush {
  uint32_t heads, kvHeads, headDim, maxCtx;
  float scale;
  uint32_t qOffset, outOffset, kCache, vCache, posOffset, scoresOffset;
};

struct AttentionCase {
  uint32_t heads, kvHeads, headDim, kFormat, vFormat;
};

class VulkanAttention : public VulkanTest,
                        public ::testing::WithParamInterface<AttentionCase> {};

float stored(uint32_t format, float v) {
  return format == 1 ? kiln_fp16_to_fp32(kiln_fp32_to_fp16(v)) : v;
}

TEST_P(VulkanAttention, PrefillThenDecodeMatchesSoftmaxOverTheCache) {
  const AttentionCase c = GetParam();
  const uint32_t maxCtx = 40, kvWidth = c.kvHeads * c.headDim, width = c.heads * c.headDim;
  const uint32_t planeBytes = maxCtx * kvWidth * (c.kFormat == 1 ? 2 : 4);
  const uint32_t vPlane = (planeBytes + 63) / 64 * 64;
  const uint32_t cacheBytes = vPlane + maxCtx * kvWidth * (c.vFormat == 1 ? 2 : 4);
  auto cache = upload(std::vector<uint8_t>(), cacheBytes);
  Pipeline store = pipeline("kv_store", 4, sizeof(KvPush), {64, c.kFormat, c.vFormat});
  Pipeline attend = pipeline("attention", 5, sizeof(AttnPush), {64, c.kFormat, c.vFormat});
  const float scale = 1.0f / std::sqrt(float(c.headDim));
  // The reference cache: what the GPU stored, as floats.
  std::vector<float> refK(size_t(maxCtx) * kvWidth), refV(size_t(maxCtx) * kvWidth);

  const std::vector<std::vector<int32_t>> steps = {{0, 1, 2, 3, 4}, {5}};
  uint32_t seed = 100;
  for (const auto &pos : steps) {
    const uint32_t n = (uint32_t)pos.size();
    std::vector<float> q = randomFloats(size_t(n) * width, seed++);
    std::vector<float> k = randomFloats(size_t(n) * kvWidth, seed++);
    std::vector<float> v = randomFloats(size_t(n) * kvWidth, seed++);
    for (auto &e : q)
      e *= 3.0f; // sharper softmax
    auto qb = upload(q);
    auto kb = upload(k);
    auto vb = upload(v);
    auto pb = upload(pos);
    auto sb = upload(std::vector<float>(size_t(n) * c.heads * maxCtx));
    auto ob = upload(std::vector<float>(size_t(n) * width, NAN));
    kiln_error_t err;
    ASSERT_EQ(kiln_vk_begin(dev(), &err), KILN_STATUS_OK);
    KvPush kp{n, kvWidth, 0, 0, 0, vPlane, 0};
    kiln_vk_buffer_t *kvBufs[4] = {kb.get(), vb.get(), cache.get(), pb.get()};
    ASSERT_EQ(kiln_vk_dispatch(dev(), store.get(), kvBufs, &kp, groups(kvWidth / 2, 64), n, 1, &err),
              KILN_STATUS_OK);
    AttnPush ap{c.heads, c.kvHeads, c.headDim, maxCtx, scale, 0, 0, 0, vPlane, 0, 0};
    kiln_vk_buffer_t *aBufs[5] = {qb.get(), cache.get(), pb.get(), sb.get(), ob.get()};
    ASSERT_EQ(kiln_vk_dispatch(dev(), attend.get(), aBufs, &ap, c.heads, n, 1, &err),
              KILN_STATUS_OK);
    ASSERT_EQ(kiln_vk_end(dev(), &err), KILN_STATUS_OK);
    ASSERT_EQ(kiln_vk_submit_wait(dev(), 0, &err), KILN_STATUS_OK) << err.message;

    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t i = 0; i < kvWidth; ++i) {
        refK[size_t(pos[t]) * kvWidth + i] = stored(c.kFormat, k[size_t(t) * kvWidth + i]);
        refV[size_t(pos[t]) * kvWidth + i] = stored(c.vFormat, v[size_t(t) * kvWidth + i]);
      }
    std::vector<float> out = download<float>(ob.get(), size_t(n) * width);
    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t h = 0; h < c.heads; ++h) {
        const uint32_t g = h / (c.heads / c.kvHeads), len = pos[t] + 1;
        std::vector<double> s(len);
        double mx = -1e300, total = 0;
        for (uint32_t j = 0; j < len; ++j) {
          double d = 0;
          for (uint32_t i = 0; i < c.headDim; ++i)
            d += double(q[(size_t(t) * c.heads + h) * c.headDim + i]) *
                 refK[size_t(j) * kvWidth + g * c.headDim + i];
          s[j] = d * scale;
          mx = std::max(mx, s[j]);
        }
        for (auto &e : s)
          total += (e = std::exp(e - mx));
        for (uint32_t i = 0; i < c.headDim; ++i) {
          double ref = 0;
          for (uint32_t j = 0; j < len; ++j)
            ref += s[j] / total * refV[size_t(j) * kvWidth + g * c.headDim + i];
          ASSERT_NEAR(out[(size_t(t) * c.heads + h) * c.headDim + i], ref, 2e-5)
              << "position " << pos[t] << " head " << h << " dim " << i;
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Caches, VulkanAttention,
    ::testing::Values(AttentionCase{8, 4, 8, 0, 0}, AttentionCase{8, 4, 8, 1, 1},
                      AttentionCase{4, 2, 64, 0, 1}, AttentionCase{4, 4, 64, 1, 0}),
    [](const ::testing::TestParamInfo<AttentionCase> &info) {
      const AttentionCase &c = info.param;
      return "h" + std::to_string(c.heads) + "_kv" + std::to_string(c.kvHeads) + "_d" +
             std::to_string(c.headDim) + (c.kFormat ? "_kf16" : "_kf32") +
             (c.vFormat ? "_vf16" : "_vf32");
    });

} // namespace
} // namespace kiln::vktest
