#include "compiler/artifact/ArtifactWriter.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "artifact_generated.h"
#include "kiln/artifact.h"

namespace kiln::artifact {

namespace {

constexpr uint64_t kPage = 4096;

struct SectionInfo {
  uint32_t kind;
  uint64_t offset, size, xxh64;
  uint32_t alignment;
};

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

flatbuffers::Offset<fb::Artifact> buildHeader(flatbuffers::FlatBufferBuilder &b,
                                              const ArtifactContents &c,
                                              const std::vector<SectionInfo> &sections) {
  const TargetRecord &t = c.target;
  std::vector<flatbuffers::Offset<flatbuffers::String>> f;
  for (const std::string &s : t.features)
    f.push_back(b.CreateString(s));
  auto target = fb::CreateTarget(b, b.CreateString(t.name), b.CreateString(t.triple),
                                 b.CreateString(t.cpu), f.empty() ? 0 : b.CreateVector(f),
                                 t.abiVersion, b.CreateString(t.entry),
                                 t.governor.empty() ? 0 : b.CreateString(t.governor));
  const ModelConfigRecord &m = c.config;
  auto config = fb::CreateModelConfigDirect(
      b, m.arch.c_str(), m.vocabSize, m.dim, m.numLayers, m.numHeads, m.numKvHeads, m.headDim,
      m.ffnDim, m.contextLength, m.ropeDims, m.ropeTheta, m.rmsEps, m.ropeStyle);

  const TokenizerRecord &k = c.tokenizer;
  std::vector<flatbuffers::Offset<flatbuffers::String>> toks;
  for (const std::string &s : k.tokens)
    toks.push_back(b.CreateString(s));
  // SentencePiece records leave the byte-level fields out, so their bytes do not change.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> merges;
  flatbuffers::Offset<flatbuffers::String> pretokenizer;
  if (k.model == "gpt2") {
    std::vector<flatbuffers::Offset<flatbuffers::String>> m;
    for (const std::string &s : k.merges)
      m.push_back(b.CreateString(s));
    merges = b.CreateVector(m);
    pretokenizer = b.CreateString(k.pretokenizer);
  }
  // Likewise the chat template: no strings without one.
  flatbuffers::Offset<flatbuffers::String> chat, chatSource;
  if (!k.chatTemplate.empty()) {
    chat = b.CreateString(k.chatTemplate);
    if (!k.chatTemplateSource.empty())
      chatSource = b.CreateString(k.chatTemplateSource);
  }
  auto tokenizer = fb::CreateTokenizer(b, b.CreateString(k.model), b.CreateVector(toks),
                                       b.CreateVector(k.scores), b.CreateVector(k.types),
                                       k.bosId, k.eosId, k.unkId, k.addSpacePrefix, k.addBos,
                                       merges, pretokenizer, k.ignoreMerges, k.eotId, chat,
                                       chatSource);

  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const TensorRecord &r : c.tensors)
    tensors.push_back(fb::CreateTensorDirect(b, r.name.c_str(), r.format, &r.shape,
                                             r.paddedRowLength, r.rowStride, r.offset, r.size,
                                             r.paddingBytes,
                                             r.conversion.empty() ? nullptr
                                                                  : r.conversion.c_str()));
  const MemoryPlanRecord &p = c.memory;
  auto memory = fb::CreateMemoryPlan(b, p.scratchBytes, p.kvBytes, p.kvBytesPerToken,
                                     p.maxBatch, p.maxCtx, p.weightBytesPerToken, p.kvKFormat,
                                     p.kvVFormat);
  std::vector<flatbuffers::Offset<fb::PassRecord>> passes;
  for (const PassRecord &r : c.provenance.passes)
    passes.push_back(fb::CreatePassRecordDirect(b, r.name.c_str(), r.params.c_str(),
                                                r.effects.c_str()));
  const ProvenanceRecord &v = c.provenance;
  auto provenance = fb::CreateProvenanceDirect(b, v.sourceFile.c_str(), v.sourceSha256.c_str(),
                                               v.compilerVersion.c_str(), &passes);
  std::vector<flatbuffers::Offset<fb::Section>> secs;
  for (const SectionInfo &s : sections)
    secs.push_back(fb::CreateSection(b, s.kind, s.offset, s.size, s.xxh64, s.alignment));
  flatbuffers::Offset<fb::Module> module;
  if (c.module) {
    const ModuleRecord &r = *c.module;
    module = fb::CreateModuleDirect(b, r.kind.c_str(), r.name.c_str(), r.version.c_str(),
                                    r.baseWeightsXxh64, r.baseWeightsSize, &r.bannedTokens);
  }
  return fb::CreateArtifact(b, KILN_ARTIFACT_FORMAT_VERSION, target, config, tokenizer,
                            b.CreateVector(tensors), memory, provenance, b.CreateVector(secs),
                            module);
}

// The file's layout: the preamble and header bytes, and where each section goes.
struct Layout {
  std::vector<uint8_t> head; // preamble + FlatBuffer header
  std::vector<SectionInfo> sections; // [0] weights, [1] code (none in a module), [2] gpu
  uint64_t fileSize = 0;
};

Layout layoutArtifact(const ArtifactContents &c) {
  const std::vector<uint8_t> &weights = c.weightBytes();
  // Hashed once: the weights can be gigabytes.
  const uint64_t weightsHash = kiln_xxh64(weights.data(), weights.size());
  const uint64_t codeHash = kiln_xxh64(c.code.data(), c.code.size());
  const uint64_t gpuHash = kiln_xxh64(c.gpu.data(), c.gpu.size());
  // Section offsets depend on the header size, which depends on the offsets' encoding
  // only through fixed-width fields: build once with placeholders to learn the size.
  auto sectionsFor = [&](uint64_t headerSize) {
    std::vector<SectionInfo> s(2);
    uint64_t weightsAt = alignUp(KILN_ARTIFACT_PREAMBLE_SIZE + headerSize, kPage);
    s[0].kind = KILN_SECTION_WEIGHTS;
    s[0].offset = weightsAt;
    s[0].size = weights.size();
    s[0].xxh64 = weightsHash;
    s[0].alignment = uint32_t(kPage);
    s[1].kind = KILN_SECTION_CODE;
    s[1].offset = alignUp(weightsAt + weights.size(), KILN_ARTIFACT_SECTION_ALIGN);
    s[1].size = c.code.size();
    s[1].xxh64 = codeHash;
    s[1].alignment = KILN_ARTIFACT_SECTION_ALIGN;
    if (c.module)
      s.pop_back();
    if (!c.gpu.empty() && !c.module) {
      SectionInfo g;
      g.kind = KILN_SECTION_GPU;
      g.offset = alignUp(s[1].offset + s[1].size, KILN_ARTIFACT_SECTION_ALIGN);
      g.size = c.gpu.size();
      g.xxh64 = gpuHash;
      g.alignment = KILN_ARTIFACT_SECTION_ALIGN;
      s.push_back(g);
    }
    return s;
  };
  flatbuffers::FlatBufferBuilder probe;
  probe.Finish(buildHeader(probe, c, sectionsFor(0)), fb::ArtifactIdentifier());
  // Offsets only grow the page-rounded position; one more pass settles the size.
  Layout l;
  l.sections = sectionsFor(probe.GetSize());
  flatbuffers::FlatBufferBuilder b;
  b.Finish(buildHeader(b, c, l.sections), fb::ArtifactIdentifier());
  if (alignUp(KILN_ARTIFACT_PREAMBLE_SIZE + b.GetSize(), kPage) != l.sections[0].offset) {
    l.sections = sectionsFor(b.GetSize());
    b.Clear();
    b.Finish(buildHeader(b, c, l.sections), fb::ArtifactIdentifier());
  }
  l.fileSize = l.sections.back().offset + l.sections.back().size;

  kiln_artifact_preamble_t pre;
  std::memset(&pre, 0, sizeof pre);
  std::memcpy(pre.magic, KILN_ARTIFACT_MAGIC, 8);
  pre.format_version = KILN_ARTIFACT_FORMAT_VERSION;
  pre.preamble_size = KILN_ARTIFACT_PREAMBLE_SIZE;
  pre.header_offset = KILN_ARTIFACT_PREAMBLE_SIZE;
  pre.header_size = b.GetSize();
  pre.header_xxh64 = kiln_xxh64(b.GetBufferPointer(), b.GetSize());
  pre.file_size = l.fileSize;
  l.head.assign(KILN_ARTIFACT_PREAMBLE_SIZE + b.GetSize(), 0);
  std::memcpy(l.head.data(), &pre, sizeof pre);
  std::memcpy(l.head.data() + KILN_ARTIFACT_PREAMBLE_SIZE, b.GetBufferPointer(), b.GetSize());
  return l;
}

} // namespace

std::vector<uint8_t> serializeArtifact(const ArtifactContents &c) {
  const Layout l = layoutArtifact(c);
  const std::vector<uint8_t> &weights = c.weightBytes();
  std::vector<uint8_t> out(l.fileSize, 0);
  std::memcpy(out.data(), l.head.data(), l.head.size());
  if (!weights.empty())
    std::memcpy(out.data() + l.sections[0].offset, weights.data(), weights.size());
  if (!c.code.empty() && l.sections.size() > 1)
    std::memcpy(out.data() + l.sections[1].offset, c.code.data(), c.code.size());
  if (l.sections.size() > 2)
    std::memcpy(out.data() + l.sections[2].offset, c.gpu.data(), c.gpu.size());
  return out;
}

bool writeArtifact(const ArtifactContents &c, const std::string &path, std::string &error) {
  const Layout l = layoutArtifact(c);
  const std::vector<uint8_t> &weights = c.weightBytes();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    error = "cannot write '" + path + "'";
    return false;
  }
  uint64_t at = 0;
  // Zeros up to `offset`, then `size` bytes from `data`.
  auto put = [&](uint64_t offset, const uint8_t *data, uint64_t size) {
    static const char zeros[4096] = {};
    for (; at < offset; at += std::min<uint64_t>(offset - at, sizeof zeros))
      f.write(zeros, std::streamsize(std::min<uint64_t>(offset - at, sizeof zeros)));
    f.write(reinterpret_cast<const char *>(data), std::streamsize(size));
    at += size;
  };
  put(0, l.head.data(), l.head.size());
  put(l.sections[0].offset, weights.data(), weights.size());
  if (l.sections.size() > 1)
    put(l.sections[1].offset, c.code.data(), c.code.size());
  if (l.sections.size() > 2)
    put(l.sections[2].offset, c.gpu.data(), c.gpu.size());
  f.close();
  if (!f || at != l.fileSize) {
    error = "writing '" + path + "' failed";
    return false;
  }
  return true;
}

} // namespace kiln::artifact
