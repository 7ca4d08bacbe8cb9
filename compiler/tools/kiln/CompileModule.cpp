#include "compiler/tools/kiln/CompileModule.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "llvm/Support/MemoryBuffer.h"

#include "artifact_generated.h"
#include "kiln/artifact.h"

namespace kiln::tool {

namespace {

// What a module needs of its base: weights and code sections, tensor table.
struct BaseArtifact {
  std::unique_ptr<llvm::MemoryBuffer> file;
  const fb::Artifact *header = nullptr;
  const uint8_t *weights = nullptr;
  uint64_t weightsSize = 0, weightsXxh64 = 0, codeXxh64 = 0;
};

bool openBase(const std::string &path, BaseArtifact &b, std::string &error) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = "cannot read base artifact '" + path + "'";
    return false;
  }
  b.file = std::move(*buf);
  const uint8_t *data = reinterpret_cast<const uint8_t *>(b.file->getBufferStart());
  const uint64_t size = b.file->getBufferSize();
  auto fail = [&](const std::string &why) {
    error = "base artifact '" + path + "': " + why;
    return false;
  };
  kiln_artifact_preamble_t pre;
  if (size < sizeof pre)
    return fail("too short to be an artifact");
  std::memcpy(&pre, data, sizeof pre);
  if (std::memcmp(pre.magic, KILN_ARTIFACT_MAGIC, 8) != 0 ||
      pre.format_version != KILN_ARTIFACT_FORMAT_VERSION || pre.file_size != size ||
      pre.header_offset > size || pre.header_size > size - pre.header_offset)
    return fail("not a kiln artifact of this format version, or truncated");
  const uint8_t *header = data + pre.header_offset;
  if (kiln_xxh64(header, pre.header_size) != pre.header_xxh64)
    return fail("header checksum mismatch");
  flatbuffers::Verifier verifier(header, pre.header_size);
  if (!fb::VerifyArtifactBuffer(verifier))
    return fail("the header is not a valid artifact FlatBuffer");
  b.header = fb::GetArtifact(header);
  if (b.header->module_())
    return fail("it is itself a module; give the model artifact it belongs to");
  bool haveWeights = false, haveCode = false;
  for (const fb::Section *s : *b.header->sections()) {
    if (s->offset() > size || s->size() > size - s->offset())
      return fail("a section lies outside the file");
    if (s->kind() == KILN_SECTION_WEIGHTS) {
      b.weights = data + s->offset();
      b.weightsSize = s->size();
      b.weightsXxh64 = s->xxh64();
      haveWeights = kiln_xxh64(b.weights, b.weightsSize) == s->xxh64();
    } else if (s->kind() == KILN_SECTION_CODE) {
      b.codeXxh64 = s->xxh64();
      haveCode = true;
    }
  }
  if (!haveWeights || !haveCode || !b.header->tensors())
    return fail("missing or corrupt weights or code section");
  return true;
}

std::string shapeText(const std::vector<uint64_t> &s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? "x" : "") + std::to_string(s[i]);
  return t;
}

// The base's tensor table equals the whole compile's, record by record.
bool sameTensorTable(const BaseArtifact &b, const artifact::ArtifactContents &whole,
                     std::string &error) {
  const auto &bt = *b.header->tensors();
  if (bt.size() != whole.tensors.size()) {
    error = "the base has " + std::to_string(bt.size()) + " tensors, this compile " +
            std::to_string(whole.tensors.size()) +
            ": compile the module with the base's options";
    return false;
  }
  for (flatbuffers::uoffset_t i = 0; i < bt.size(); ++i) {
    const fb::Tensor *t = bt.Get(i);
    const artifact::TensorRecord &r = whole.tensors[i];
    std::vector<uint64_t> shape;
    if (t->shape())
      shape.assign(t->shape()->begin(), t->shape()->end());
    if (!t->name() || t->name()->str() != r.name || t->format() != r.format ||
        shape != r.shape || t->offset() != r.offset || t->size() != r.size ||
        t->row_stride() != r.rowStride || t->padded_row_length() != r.paddedRowLength) {
      error = "tensor " + std::to_string(i) + " differs from the base's: '" + r.name +
              "' format " + std::to_string(r.format) + " " + shapeText(r.shape) + " vs '" +
              (t->name() ? t->name()->str() : "") + "' format " +
              std::to_string(t->format()) + " " + shapeText(shape) +
              ": compile the module with the base's options (precision, layout, fusion)";
      return false;
    }
  }
  return true;
}

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

} // namespace

bool resolveBans(const std::vector<std::string> &bans, const artifact::TokenizerRecord &tok,
                 uint32_t vocabSize, std::vector<int32_t> &ids, std::string &error) {
  for (const std::string &b : bans) {
    if (b.rfind("id:", 0) == 0) {
      char *end = nullptr;
      const unsigned long long v = std::strtoull(b.c_str() + 3, &end, 10);
      if (b.size() == 3 || *end || v >= vocabSize) {
        error = "--ban " + b + ": not a token id below the vocabulary size " +
                std::to_string(vocabSize);
        return false;
      }
      ids.push_back(int32_t(v));
      continue;
    }
    const size_t before = ids.size();
    for (size_t i = 0; i < tok.tokens.size(); ++i) {
      const std::string &t = tok.tokens[i];
      if (t == b || t == "\xE2\x96\x81" + b || t == "\xC4\xA0" + b)
        ids.push_back(int32_t(i));
    }
    if (ids.size() == before) {
      error = "--ban '" + b + "': no vocabulary entry spells it; a filter bans whole tokens: "
              "give a vocabulary entry, a word that is one token, or id:N";
      return false;
    }
  }
  return true;
}

bool writeModule(const artifact::ArtifactContents &whole, ModuleRequest req,
                 std::string &error) {
  BaseArtifact base;
  if (!openBase(req.base, base, error))
    return false;
  const std::vector<uint8_t> &w = whole.weightBytes();
  const uint64_t codeHash = kiln_xxh64(whole.code.data(), whole.code.size());
  if (codeHash != base.codeXxh64 || w.size() != base.weightsSize) {
    error = "this compile's code or weight size differs from the base artifact '" + req.base +
            "': compile the module with the base's options (target, --ctx, --max-batch, "
            "--kv, --layout, --fusion, precision)";
    return false;
  }
  if (!sameTensorTable(base, whole, error))
    return false;

  artifact::ArtifactContents m;
  m.target = whole.target;
  m.config = whole.config;
  m.tokenizer.model.clear();
  m.provenance = whole.provenance; // its model-edit records say what was merged
  uint64_t changedBytes = 0;
  for (const artifact::TensorRecord &r : whole.tensors) {
    if (std::memcmp(w.data() + r.offset, base.weights + r.offset, r.size) == 0)
      continue;
    artifact::TensorRecord t = r;
    t.conversion = (req.record.kind == "adapter" ? "LoRA merged in the source format, then "
                                                 : "from the head file, then ") +
                   r.conversion;
    t.offset = alignUp(m.weights.size(), 64);
    m.weights.resize(t.offset + r.size);
    std::memcpy(m.weights.data() + t.offset, w.data() + r.offset, r.size);
    m.tensors.push_back(std::move(t));
    changedBytes += r.size;
  }
  if (m.tensors.empty() && req.record.bannedTokens.empty()) {
    error = "the module would be empty: the edits change no tensor of the base and nothing "
            "is banned";
    return false;
  }
  req.record.baseWeightsXxh64 = base.weightsXxh64;
  req.record.baseWeightsSize = base.weightsSize;
  char baseHash[17];
  std::snprintf(baseHash, sizeof baseHash, "%016" PRIx64, base.weightsXxh64);
  m.provenance.passes.push_back(
      {"module", "kind=" + req.record.kind + ",base_weights_xxh64=" + baseHash,
       "tensors=" + std::to_string(m.tensors.size()) + ",tensor_bytes=" +
           std::to_string(changedBytes) + ",banned=" +
           std::to_string(req.record.bannedTokens.size())});
  m.module = req.record;
  if (!artifact::writeArtifact(m, req.output, error))
    return false;
  std::fprintf(stderr,
               "wrote module %s (%s '%s'): %zu of %zu tensors replaced, %" PRIu64
               " of %zu weight bytes, %zu banned tokens\n",
               req.output.c_str(), req.record.kind.c_str(), req.record.name.c_str(),
               m.tensors.size(), whole.tensors.size(), changedBytes, w.size(),
               req.record.bannedTokens.size());
  return true;
}

} // namespace kiln::tool
