//===- ArtifactWriter.h - writes .kiln artifacts --------------------------===//
//
// Serialises everything the compiler decided into one .kiln file: the 64-byte preamble
// (kiln/artifact.h), the FlatBuffer header (runtime-min/schema/artifact.fbs) and the
// weights and code sections, each 64-byte aligned (the weights section starts on a page
// boundary so it can be mapped as a shard), each with its xxHash64. No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
#define KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/abi.h"

namespace kiln::artifact {

struct TargetRecord {
  std::string name;    // "x86-64-v3"
  std::string triple;  // "x86_64-unknown-linux-gnu"
  std::string cpu;     // "x86-64-v3"
  std::vector<std::string> features; // required CPU features ("avx2", "fma", ...)
  uint32_t abiVersion = KILN_ABI_VERSION;
  std::string entry = KILN_ABI_ENTRY;
  std::string governor; // the chip's governor SPEC defaults ("" none: the field is left out)
};

struct ModelConfigRecord {
  std::string arch = "llama";
  uint32_t vocabSize = 0, dim = 0, numLayers = 0, numHeads = 0, numKvHeads = 0, headDim = 0,
           ffnDim = 0, contextLength = 0, ropeDims = 0;
  float ropeTheta = 10000.0f, rmsEps = 1e-5f;
  uint32_t ropeStyle = 0; // 0 adjacent, 1 rotate-half
};

struct TokenizerRecord {
  std::string model = "llama"; // "llama": SentencePiece BPE; "gpt2": byte-level BPE
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  int32_t bosId = -1, eosId = -1, unkId = -1;
  int32_t eotId = -1; // end of turn (Llama 3's <|eot_id|>), -1 if none
  bool addSpacePrefix = true, addBos = true;
  // Byte-level BPE: "left right" merges by rank, the pre-tokenizer ("llama3" or "gpt2") and
  // whether a piece that is a token is taken whole.
  std::vector<std::string> merges;
  std::string pretokenizer;
  bool ignoreMerges = false;
  // The chat template family runtime-min renders ("llama3", ... ; "" none) and the model's
  // Jinja text it was recognised from.
  std::string chatTemplate, chatTemplateSource;
};

struct TensorRecord {
  std::string name;
  uint32_t format = 0;
  std::vector<uint64_t> shape; // ggml order
  uint64_t paddedRowLength = 0, rowStride = 0, offset = 0, size = 0, paddingBytes = 0;
  std::string conversion; // "lossless", "requantised from f16", ...
};

struct MemoryPlanRecord {
  uint64_t scratchBytes = 0, kvBytes = 0, kvBytesPerToken = 0;
  uint32_t maxBatch = 0, maxCtx = 0;
  uint64_t weightBytesPerToken = 0;
  uint32_t kvKFormat = 0, kvVFormat = 0; // ggml type ids (dialects/kiln/IR/KvFormat.h)
};

struct PassRecord {
  std::string name, params, effects;
};

struct ProvenanceRecord {
  std::string sourceFile, sourceSha256, compilerVersion;
  std::vector<PassRecord> passes;
};

// A module file's record (kiln/module.h): no code section is written for one.
struct ModuleRecord {
  std::string kind; // "adapter", "head", "filter"
  std::string name, version;
  uint64_t baseWeightsXxh64 = 0, baseWeightsSize = 0;
  std::vector<int32_t> bannedTokens;
};

struct ArtifactContents {
  TargetRecord target;
  ModelConfigRecord config;
  TokenizerRecord tokenizer;
  std::vector<TensorRecord> tensors; // offsets relative to `weights`
  MemoryPlanRecord memory;
  ProvenanceRecord provenance;
  std::vector<uint8_t> weights;      // the weights section
  // When set, the weights section is these bytes instead of `weights`: the compiler's
  // packed weights, which are as large as the model, are written without a copy.
  const std::vector<uint8_t> *weightsRef = nullptr;
  std::vector<uint8_t> code;         // the code section (ELF shared object)
  std::vector<uint8_t> gpu;          // the GPU section (kiln/gpu_program.h), when not empty
  std::optional<ModuleRecord> module; // a module: no code section

  const std::vector<uint8_t> &weightBytes() const { return weightsRef ? *weightsRef : weights; }
};

// The whole file image (tests; the compiler streams the file with writeArtifact).
std::vector<uint8_t> serializeArtifact(const ArtifactContents &contents);
// Writes the file section by section, holding no second copy of the weights.
bool writeArtifact(const ArtifactContents &contents, const std::string &path,
                   std::string &error);

} // namespace kiln::artifact

#endif // KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
