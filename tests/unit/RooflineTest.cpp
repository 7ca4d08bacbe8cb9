//===- RooflineTest.cpp - decode estimates, target names, Llama byte counts -===//
#include <gtest/gtest.h>

#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/Roofline.h"
#include "codegen/targets/TargetResolver.h"
#include "compiler/tools/kiln/LlamaShapes.h"
#include "kiln/quant.h"

using namespace kiln;
using namespace kiln::codegen;

namespace {

const ChipProfile &chip(const std::string &name) {
  const BuiltinProfile *b = findBuiltinProfile(name);
  EXPECT_NE(b, nullptr) << name;
  return b->profile;
}

} // namespace

TEST(Roofline, BandwidthOverBytesTimesEfficiency) {
  // 600 MB of weights + 100 KB x 2000 positions = 800 MB per token; 76.8 GB/s -> 96 tok/s.
  DecodeTraffic t{600000000, 100000, 2000};
  EXPECT_EQ(t.bytesPerToken(), 800000000u);
  DecodeEstimate e;
  std::string error;
  ASSERT_TRUE(estimateDecode(t, chip("snapdragon-8-gen-3"), 0.5, e, error)) << error;
  EXPECT_DOUBLE_EQ(e.bandwidthGbs, 76.8);
  EXPECT_NEAR(e.upperTokS, 96.0, 1e-9);
  EXPECT_NEAR(e.realisticTokS, 48.0, 1e-9);
  std::string text = formatEstimate(t, chip("snapdragon-8-gen-3"), e);
  EXPECT_NE(text.find("upper bound     96.0 tok/s"), std::string::npos) << text;
  EXPECT_NE(text.find("realistic       48.0 tok/s (x efficiency 0.50)"), std::string::npos);
}

TEST(Roofline, RefusesWhatItCannotEstimate) {
  DecodeEstimate e;
  std::string error;
  EXPECT_FALSE(estimateDecode({1000, 0, 0}, chip("hexagon-v73"), 0.5, e, error));
  EXPECT_NE(error.find("has no DRAM figures"), std::string::npos) << error;
  EXPECT_FALSE(estimateDecode({1000, 0, 0}, chip("tensor-g4"), 0.0, e, error));
  EXPECT_NE(error.find("efficiency"), std::string::npos) << error;
  EXPECT_FALSE(estimateDecode({0, 0, 0}, chip("tensor-g4"), 0.5, e, error));
}

TEST(TargetResolver, NamesResolveInOnePlace) {
  TargetChoice c;
  std::string error;
  ASSERT_TRUE(resolveTarget("snapdragon-8-gen-3:hvx", c, error)) << error;
  EXPECT_EQ(c.chip->name, "snapdragon-8-gen-3");
  EXPECT_EQ(c.engine, "hvx");
  ASSERT_TRUE(resolveTarget("x86-64-v3", c, error)) << error;
  EXPECT_EQ(c.host->name, "x86-64-v3");
  EXPECT_FALSE(resolveTarget("dimensity-9300:hvx", c, error));
  EXPECT_EQ(error, "chip 'dimensity-9300' has no engine 'hvx' (it has: cpu, gpu)");
  EXPECT_FALSE(resolveTarget("snapdragon-8-gen-3", c, error));
  EXPECT_EQ(error, "target 'snapdragon-8-gen-3' is a chip: name an engine, "
                   "snapdragon-8-gen-3:cpu or snapdragon-8-gen-3:hvx or snapdragon-8-gen-3:gpu");
  // The GPU resolves (kiln targets prints it); it is no CPU target: createTargetBackend
  // makes it the chip's CPU code plus a Vulkan program.
  ASSERT_TRUE(resolveTarget("exynos-2400:gpu", c, error)) << error;
  EXPECT_EQ(c.engine, "gpu");
  EXPECT_EQ(findCodegenTarget("exynos-2400:gpu", error), nullptr);
  EXPECT_EQ(error, "target 'exynos-2400:gpu' is a GPU, not a CPU target");
  EXPECT_FALSE(resolveTarget("pentium", c, error));
  EXPECT_NE(error.find("unknown target 'pentium' (known: host, x86-64-v3"), std::string::npos);
  EXPECT_NE(error.find("tensor-g4:cpu"), std::string::npos) << error;
}

TEST(TargetResolver, ChipEnginesGenerateAarch64AndHexagon) {
  std::string error;
  const CpuTarget *t = findCodegenTarget("snapdragon-8-gen-3:cpu", error);
  ASSERT_NE(t, nullptr) << error;
  EXPECT_EQ(t->triple, "aarch64-unknown-linux-gnu");
  EXPECT_EQ(t->tuneCpu, "cortex-x4");
  EXPECT_EQ(findCodegenTarget("snapdragon-8-gen-3:cpu", error), t); // made once
  const CpuTarget *h = findCodegenTarget("hexagon-v73:hvx", error);
  ASSERT_NE(h, nullptr) << error;
  EXPECT_EQ(h->triple, "hexagon-unknown-unknown-elf");
  EXPECT_EQ(h->cpu, "hexagonv73");
  EXPECT_EQ(h->requiredFeatures, (std::vector<std::string>{"hvx-length128b"}));
  // v75 SoCs run v73 code (LLVM 19's newest); the emulated v67 gets its own kernels.
  const CpuTarget *sd = findCodegenTarget("snapdragon-8-gen-3:hvx", error);
  ASSERT_NE(sd, nullptr) << error;
  EXPECT_EQ(sd->bitcode, h->bitcode);
  const CpuTarget *v67 = findCodegenTarget("hexagon-v67:hvx", error);
  ASSERT_NE(v67, nullptr) << error;
  EXPECT_EQ(v67->cpu, "hexagonv67");
  EXPECT_NE(v67->bitcode, h->bitcode);
  EXPECT_EQ(findCodegenTarget("hexagon-v73:cpu", error), nullptr);
  EXPECT_NE(findCodegenTarget("x86-64-v4", error), nullptr);
}

// Hand count for Llama-3.2-1B, q4_0 (18 bytes per 32 weights), f32 norms, tied classifier:
//   per layer  q, o   2048 x 2048 x 18/32 = 2,359,296 each
//              k, v   2048 x  512 x 18/32 =   589,824 each
//              gate, up, down 2048 x 8192 x 18/32 = 9,437,184 each
//              2 norms 2 x 2048 x 4 = 16,384          -> 34,226,176; x 16 = 547,618,816
//   final norm 8,192; classifier (the tied embedding, in 16-row groups of 16 x 1,152 bytes)
//   128256 x 1,152 = 147,750,912; the embedding row is read from its group: 18,432
//                                                                   -> 695,396,352
TEST(LlamaShapes, Llama32OneBAtQ4_0ByHand) {
  const tool::LlamaShape *s = tool::findLlamaShape("llama-3.2-1b");
  ASSERT_NE(s, nullptr);
  precision::Rules q4;
  q4.defaultFormat = KILN_GGML_TYPE_Q4_0;
  q4.byClass["norms"] = KILN_GGML_TYPE_F32;
  EXPECT_EQ(tool::decodeWeightBytes(*s, q4), 695396352u);
  // An 8-bit classifier and embedding (34 bytes per 32): 128256 x 2176 + 16 x 2176 instead.
  precision::Rules mixed = q4;
  mixed.byClass["embedding"] = mixed.byClass["output"] = KILN_GGML_TYPE_Q8_0;
  EXPECT_EQ(tool::decodeWeightBytes(*s, mixed), 695396352u - 147750912u - 18432u +
                                                    128256u * 2176u + 16u * 2176u);
  // f16 has no groups: a tied f16 table is read as rows (one embedding row, 4,096 bytes)
  precision::Rules half = q4;
  half.byClass["embedding"] = half.byClass["output"] = KILN_GGML_TYPE_F16;
  EXPECT_EQ(tool::decodeWeightBytes(*s, half), 695396352u - 147750912u - 18432u +
                                                   128256u * 4096u + 4096u);
  // KV f16: 16 layers x 8 heads x 64 x (2 + 2) bytes per position.
  EXPECT_EQ(tool::kvBytesPerPosition(*s, KvFormat{KvElem::F16, KvElem::F16}), 32768u);
  EXPECT_EQ(tool::kvBytesPerPosition(*s, KvFormat{KvElem::I8, KvElem::F16}),
            16u * (8 * 64 * 3 + 8 * 4));
}

TEST(LlamaShapes, ShapeChecks) {
  tool::LlamaShape s{"x", 64, 2, 3, 1, 96, 320, false, ""};
  EXPECT_NE(tool::checkLlamaShape(s).find("heads (3) must divide dim (64)"), std::string::npos);
  s.heads = 4, s.kvHeads = 3;
  EXPECT_NE(tool::checkLlamaShape(s).find("kv-heads (3) must divide heads (4)"),
            std::string::npos);
  s.kvHeads = 2;
  EXPECT_EQ(tool::checkLlamaShape(s), "");
}
