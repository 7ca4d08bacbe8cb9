// Valid GGUF files that are not a Llama kiln can build: metadata that disagrees with the
// tensors, impossible head counts, missing tensors or keys, other architectures. Each is
// made from a valid synthetic model by patching one metadata value in the byte image, and
// must give one error line naming the problem. Built into kiln-gguf-corpus-asan too.
#include "compiler/frontends/gguf/GgufFile.h"
#include "compiler/frontends/gguf/GgufWriter.h"
#include "models/llama/LlamaGguf.h"
#include "models/llama/SyntheticLlama.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <iostream>

namespace {

using kiln::gguf::GgufFile;
using kiln::gguf::GgufWriter;
using Bytes = std::vector<uint8_t>;

kiln::llama::SyntheticOptions tinyOptions(const std::string &arch = "llama") {
  kiln::llama::SyntheticOptions o;
  auto &c = o.config;
  c.vocabSize = 260;
  c.dim = 32;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.headDim = 8;
  c.ffnDim = 40;
  c.contextLength = 64;
  c.ropeDims = 8;
  o.architecture = arch;
  return o;
}

Bytes tinyModel(const std::string &arch = "llama") {
  GgufWriter w;
  std::string error;
  EXPECT_TRUE(kiln::llama::addSyntheticLlama(w, tinyOptions(arch), error)) << error;
  return w.toBytes();
}

// The tiny model plus whatever `extra` adds (metadata or tensors).
Bytes tinyModelWith(const std::function<void(GgufWriter &)> &extra) {
  GgufWriter w;
  std::string error;
  EXPECT_TRUE(kiln::llama::addSyntheticLlama(w, tinyOptions(), error)) << error;
  extra(w);
  return w.toBytes();
}

void addF32Tensor(GgufWriter &w, const std::string &name, std::vector<float> v) {
  w.addTensor(name, 0, {v.size()}, v.data(), v.size() * 4);
}

// Overwrites the u32 value of metadata key `key` (string, then u32 type, then value).
Bytes patchU32(Bytes b, const std::string &key, uint32_t v) {
  for (size_t i = 0; i + key.size() + 8 <= b.size(); ++i)
    if (std::memcmp(b.data() + i, key.data(), key.size()) == 0) {
      std::memcpy(b.data() + i + key.size() + 4, &v, 4);
      return b;
    }
  ADD_FAILURE() << "key '" << key << "' not in the image";
  return b;
}

// Renames a key in place (same length) so the original key is missing.
Bytes renameKey(Bytes b, const std::string &key, const std::string &to) {
  for (size_t i = 0; i + key.size() <= b.size(); ++i)
    if (std::memcmp(b.data() + i, key.data(), key.size()) == 0) {
      std::memcpy(b.data() + i, to.data(), to.size());
      return b;
    }
  ADD_FAILURE() << "key '" << key << "' not in the image";
  return b;
}

struct ModelCase {
  std::string name;
  Bytes bytes;
  std::string expect;
};
void PrintTo(const ModelCase &c, std::ostream *os) { *os << c.name; }

std::vector<ModelCase> cases() {
  const Bytes ok = tinyModel();
  return {
      {"OtherArchitecture", tinyModel("gpt2"), "unsupported architecture 'gpt2'"},
      {"EmbeddingDisagrees", patchU32(ok, "llama.embedding_length", 48),
       "tensor 'token_embd.weight' has shape [32, 260] but the metadata implies [48, 260]"},
      {"FfnDisagrees", patchU32(ok, "llama.feed_forward_length", 64),
       "tensor 'blk.0.ffn_gate.weight' has shape [32, 40] but the metadata implies [32, 64]"},
      {"KvHeadsDisagree", patchU32(ok, "llama.attention.head_count_kv", 1),
       "tensor 'blk.0.attn_k.weight' has shape [32, 16] but the metadata implies [32, 8]"},
      {"MoreBlocksThanTensors", patchU32(ok, "llama.block_count", 3),
       "missing tensor 'blk.2.attn_norm.weight'"},
      {"HeadsDoNotDivide", patchU32(ok, "llama.attention.head_count", 3),
       "head count 3 must be positive and divide the embedding length 32"},
      {"KvHeadsDoNotDivide", patchU32(ok, "llama.attention.head_count_kv", 3),
       "KV head count 3 must be positive and divide the head count 4"},
      {"ZeroKvHeads", patchU32(ok, "llama.attention.head_count_kv", 0),
       "KV head count 0 must be positive"},
      {"ZeroBlocks", patchU32(ok, "llama.block_count", 0), "block count 0 is out of range"},
      {"AbsurdEmbedding", patchU32(ok, "llama.embedding_length", 1u << 30),
       "embedding length 1073741824 is out of range"},
      {"OddRopeDims", patchU32(ok, "llama.rope.dimension_count", 7),
       "rope dimension count 7 must be even"},
      {"RopeWiderThanHead", patchU32(ok, "llama.rope.dimension_count", 16),
       "rope dimension count 16 must be even and at most the head dimension 8"},
      {"ZeroContext", patchU32(ok, "llama.context_length", 0), "context length must be positive"},
      {"MissingContextKey", renameKey(ok, "llama.context_length", "llama.context_lengtX"),
       "missing metadata key 'llama.context_length'"},
      {"MissingEpsKey",
       renameKey(ok, "llama.attention.layer_norm_rms_epsilon",
                 "llama.attention.layer_norm_rms_epsiloX"),
       "missing metadata key 'llama.attention.layer_norm_rms_epsilon'"},
      {"MissingArchitecture", renameKey(ok, "general.architecture", "general.architecturX"),
       "missing metadata key 'general.architecture'"},
      {"MissingTensor", renameKey(ok, "blk.1.ffn_up.weight", "blk.1.ffn_uX.weight"),
       "missing tensor 'blk.1.ffn_up.weight'"},
      // What kiln does not implement is an error, never dropped in silence.
      {"ExtraBiasTensor",
       tinyModelWith([](GgufWriter &w) { addF32Tensor(w, "blk.0.attn_q.bias", std::vector<float>(32)); }),
       "tensor 'blk.0.attn_q.bias' is not part of the llama architecture kiln builds"},
      {"MixtureOfExperts", tinyModelWith([](GgufWriter &w) { w.addU32("llama.expert_count", 8); }),
       "'llama.expert_count' = 8.000000 means a mixture of experts"},
      {"YarnScaling",
       tinyModelWith([](GgufWriter &w) { w.addString("llama.rope.scaling.type", "yarn"); }),
       "'llama.rope.scaling.type' = 'yarn' means RoPE scaling other than Llama 3's"},
      {"LinearScaling",
       tinyModelWith([](GgufWriter &w) { w.addF32("llama.rope.scaling.factor", 4.0f); }),
       "'llama.rope.scaling.factor' = 4.000000 means linear RoPE scaling"},
      {"WideKeys", tinyModelWith([](GgufWriter &w) { w.addU32("llama.attention.key_length", 16); }),
       "means a key width other than embedding / heads"},
      {"RopeFreqsWrongCount",
       tinyModelWith([](GgufWriter &w) { addF32Tensor(w, "rope_freqs.weight", {1, 2, 3}); }),
       "tensor 'rope_freqs.weight' must be f32 of 4 values (one per rotated pair)"},
      {"RopeFreqsZero",
       tinyModelWith([](GgufWriter &w) { addF32Tensor(w, "rope_freqs.weight", {1, 2, 0, 8}); }),
       "rope_freqs values must be finite and positive"},
  };
}

class LlamaGgufCorpus : public ::testing::TestWithParam<ModelCase> {};

TEST_P(LlamaGgufCorpus, Rejected) {
  const ModelCase &c = GetParam();
  std::string error;
  auto file = GgufFile::parse(c.bytes.data(), c.bytes.size(), error);
  ASSERT_TRUE(file) << "the GGUF layer itself should accept this file: " << error;
  kiln::llama::LlamaConfig config;
  kiln::WeightStore weights;
  EXPECT_FALSE(
      kiln::llama::configFromSource(kiln::gguf::modelSource(*file, weights), config, error));
  std::cout << "[" << c.name << "] " << error << "\n";
  EXPECT_NE(error.find(c.expect), std::string::npos) << "got: " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Model, LlamaGgufCorpus, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

TEST(LlamaGgufCorpusMeta, BaseModelIsAccepted) {
  Bytes ok = tinyModel();
  std::string error;
  auto file = GgufFile::parse(ok.data(), ok.size(), error);
  ASSERT_TRUE(file) << error;
  kiln::llama::LlamaConfig c;
  kiln::WeightStore weights;
  ASSERT_TRUE(kiln::llama::configFromSource(kiln::gguf::modelSource(*file, weights), c, error))
      << error;
  EXPECT_EQ(c.dim, 32u);
  EXPECT_EQ(c.numKvHeads, 2u);
  EXPECT_EQ(c.vocabSize, 260u);
  EXPECT_FALSE(c.tiedOutput);
}

// Llama 3 files: rope_freqs becomes the config's factors; neutral values of the keys
// kiln does not implement are accepted.
TEST(LlamaGgufCorpusMeta, Llama3ExtrasAreRead) {
  Bytes b = tinyModelWith([](GgufWriter &w) {
    addF32Tensor(w, "rope_freqs.weight", {1, 1.5f, 4, 8});
    w.addU32("llama.expert_count", 0);
    w.addF32("llama.rope.scaling.factor", 1.0f);
    w.addString("llama.rope.scaling.type", "none");
    w.addU32("llama.attention.key_length", 8);
  });
  std::string error;
  auto file = GgufFile::parse(b.data(), b.size(), error);
  ASSERT_TRUE(file) << error;
  kiln::llama::LlamaConfig c;
  kiln::WeightStore weights;
  ASSERT_TRUE(kiln::llama::configFromSource(kiln::gguf::modelSource(*file, weights), c, error))
      << error;
  EXPECT_EQ(c.ropeFreqFactors, (std::vector<float>{1, 1.5f, 4, 8}));
}

// The converter's rule for Llama 3.1/3.2 (theta 500000, 128 rotary dims, original context
// 8192): the fastest pairs keep their frequency, the slowest are divided by 8, and the
// band between is blended.
TEST(LlamaGgufCorpusMeta, Llama3FreqFactors) {
  std::vector<float> f = kiln::llama::llama3RopeFreqFactors(500000.0f, 128, {});
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f.front(), 1.0f);
  EXPECT_EQ(f.back(), 8.0f);
  int blended = 0;
  for (size_t i = 1; i < f.size(); ++i) {
    EXPECT_GE(f[i], f[i - 1]);
    blended += f[i] > 1.0f && f[i] < 8.0f;
  }
  EXPECT_GT(blended, 0);
}

} // namespace
