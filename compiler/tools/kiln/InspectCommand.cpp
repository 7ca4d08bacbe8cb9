//===- InspectCommand.cpp - kiln inspect ----------------------------------===//
//
// Prints an artifact's header (target, config, tensors, memory plan, provenance) and
// checks it: preamble, FlatBuffer verification, header and section checksums, tensor
// bounds. A corrupt artifact is one error line and exit 1.
//===----------------------------------------------------------------------===//
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "llvm/Support/MemoryBuffer.h"

#include "artifact_generated.h"
#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/KernelCost.h"
#include "dialects/kiln/IR/KvFormat.h"
#include "compiler/artifact/ArtifactSigner.h"
#include "compiler/tools/kiln/Commands.h"
#include "compiler/tools/kiln/FileSha256.h"
#include "kiln/artifact.h"
#include "kiln/quant.h"
#include "kiln/quant_packed.h"
#include "runtime-min/src/sign/ed25519.h"
#include "runtime-min/src/sign/signature_message.h"
#ifdef KILN_HAVE_VULKAN
#include "kiln/vulkan.h"
#endif

namespace kiln::tool {

namespace {

const char *str(const flatbuffers::String *s) { return s ? s->c_str() : ""; }

std::string shape(const flatbuffers::Vector<uint64_t> *v) {
  std::string s = "[";
  for (flatbuffers::uoffset_t i = 0; v && i < v->size(); ++i)
    s += (i ? ", " : "") + std::to_string(v->Get(i));
  return s + "]";
}

// --chip: the NEON kernels' static cost on the chip's prime core for the artifact's
// packed matrices (not for Hexagon artifacts, which llvm-mca cannot time), then the memory
// plan's bytes per token against the DRAM bandwidth.
int printDecodeEstimate(const InspectOptions &opts, const fb::Artifact *a) {
  const fb::MemoryPlan *m = a->memory();
  const codegen::BuiltinProfile *b =
      codegen::findBuiltinProfile(opts.chip.substr(0, opts.chip.find(':')));
  if (!b)
    return fail("unknown chip '" + opts.chip + "' (kiln targets lists them)");
  std::vector<codegen::PackedMatrix> mats;
  for (flatbuffers::uoffset_t i = 0; a->tensors() && i < a->tensors()->size(); ++i) {
    const fb::Tensor *t = a->tensors()->Get(i);
    if (kiln_is_packed_r16(t->format()) && t->shape() && t->shape()->size() == 2)
      mats.push_back({t->format(), t->shape()->Get(1), t->shape()->Get(0)});
  }
  const std::string triple = a->target() ? str(a->target()->triple()) : "";
  if (triple.rfind("hexagon", 0) == 0)
    // The NEON table would describe code this artifact does not contain.
    std::printf("HVX kernels: llvm-mca 19 cannot time Hexagon code (its scheduling model is "
                "itineraries); count packets under qemu-hexagon-static instead "
                "(tests/bench/emu_counts.py hexagon-tokens)\n");
  else
    std::printf("%s", codegen::formatKernelCosts(b->profile, mats).c_str());
  if (!m || m->weight_bytes_per_token() == 0)
    return fail("the artifact has no memory plan with weight bytes per token");
  codegen::DecodeTraffic traffic;
  traffic.weightBytesPerToken = m->weight_bytes_per_token();
  traffic.kvBytesPerPosition = m->kv_bytes_per_token();
  traffic.contextPositions = opts.ctx ? opts.ctx : m->max_ctx();
  codegen::DecodeEstimate e;
  std::string error;
  if (!codegen::estimateDecode(traffic, b->profile, opts.efficiency, e, error))
    return fail(error);
  std::printf("%s", codegen::formatEstimate(traffic, b->profile, e).c_str());
  return 0;
}

// --extract-code: the code section's bytes as they are (checked by then), so profiles of
// the memfd the runtime maps can be read with the artifact's symbols.
int extractCode(const std::string &path, const fb::Section *code, const uint8_t *data) {
  if (!code)
    return fail("the artifact has no code section to extract");
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return fail("cannot write '" + path + "': " + std::strerror(errno));
  const bool ok = std::fwrite(data + code->offset(), 1, code->size(), f) == code->size();
  if (std::fclose(f) != 0 || !ok)
    return fail("cannot write '" + path + "': " + std::strerror(errno));
  std::printf("code: %" PRIu64 " bytes written to %s\n", code->size(), path.c_str());
  return 0;
}

// The signature trailer (kiln/artifact.h): describes it in line and sets contentEnd (where
// the sections may end); with --public-key, an unsigned file, another key or a changed byte
// is an error, reported before the header is read.
bool checkSignature(const InspectOptions &opts, const kiln_artifact_preamble_t &pre,
                    const uint8_t *data, uint64_t size, uint64_t &contentEnd, std::string &line,
                    std::string &error) {
  contentEnd = size;
  artifact::PublicKey want{};
  if (!opts.publicKey.empty() && !artifact::readPublicKey(opts.publicKey, want, error))
    return false;
  if (pre.signature_offset == 0) {
    line = "signature: none";
    if (!opts.publicKey.empty())
      error = "the artifact is not signed (--public-key asks for a signature)";
    return opts.publicKey.empty();
  }
  kiln_signature_trailer_t t;
  if (pre.signature_offset + KILN_SIGNATURE_TRAILER_SIZE != size ||
      pre.signature_offset < pre.header_offset + pre.header_size)
    return error = "the signature trailer does not end the file", false;
  std::memcpy(&t, data + pre.signature_offset, sizeof t);
  if (std::memcmp(t.magic, KILN_SIGNATURE_MAGIC, 8) != 0 ||
      t.trailer_size != KILN_SIGNATURE_TRAILER_SIZE || t.algorithm != KILN_SIGNATURE_ED25519)
    return error = "malformed signature trailer", false;
  contentEnd = pre.signature_offset;
  const std::string signer = artifact::keyHex(t.public_key);
  if (opts.publicKey.empty()) {
    line = "signature: Ed25519 by key " + signer + " (not checked: give --public-key)";
    return true;
  }
  if (std::memcmp(t.public_key, want.data(), want.size()) != 0)
    return error = "the artifact is signed by key " + signer + ", not " +
                   artifact::keyHex(want.data()),
           false;
  std::vector<uint8_t> message(kiln_signature_message_size(pre.signature_offset));
  kiln_error_t err;
  if (kiln_signature_message(data, pre.signature_offset, 0, nullptr, message.data(), &err) !=
      KILN_STATUS_OK)
    return error = err.message, false;
  if (kiln_ed25519_verify(t.signature, message.data(), message.size(), want.data()) != 0)
    return error = "the signature by key " + signer +
                   " does not match the file: it was changed after signing",
           false;
  line = "signature: Ed25519 by key " + signer + ", verified";
  return true;
}

// The GPU program: its kernels, what each needs of a device, and the placement a device
// with and without it gets (kiln/vulkan.h). The reader's error when the section does not
// read, else "".
std::string printGpuProgram(const uint8_t *section, uint64_t size) {
#ifdef KILN_HAVE_VULKAN
  std::string text(8192, '\0');
  kiln_error_t err;
  if (kiln_vulkan_describe_program(section, size, text.data(), text.size(), &err))
    return err.message;
  std::printf("%s", text.c_str());
#else
  (void)section;
  std::printf("gpu program: %" PRIu64 " bytes (this kiln is built without Vulkan: "
              "-DKILN_VULKAN=ON describes it)\n", size);
#endif
  return "";
}

} // namespace

int runInspect(const InspectOptions &opts) {
  auto buf = llvm::MemoryBuffer::getFile(opts.artifact, false, false);
  if (!buf)
    return fail("cannot read '" + opts.artifact + "'");
  const uint8_t *data = reinterpret_cast<const uint8_t *>((*buf)->getBufferStart());
  const uint64_t size = (*buf)->getBufferSize();

  kiln_artifact_preamble_t pre;
  if (size < sizeof pre)
    return fail("truncated artifact: " + std::to_string(size) + " bytes, shorter than the preamble");
  std::memcpy(&pre, data, sizeof pre);
  if (std::memcmp(pre.magic, KILN_ARTIFACT_MAGIC, 8) != 0)
    return fail("not a kiln artifact (bad magic)");
  if (pre.format_version != KILN_ARTIFACT_FORMAT_VERSION)
    return fail("unsupported artifact format version " + std::to_string(pre.format_version));
  if (pre.file_size != size)
    return fail("artifact is " + std::to_string(size) + " bytes but its preamble says " +
                std::to_string(pre.file_size) + " (truncated or padded)");
  if (pre.header_offset > size || pre.header_size > size - pre.header_offset)
    return fail("header range runs past the end of the file");
  const uint8_t *header = data + pre.header_offset;
  if (kiln_xxh64(header, pre.header_size) != pre.header_xxh64)
    return fail("header checksum mismatch");
  uint64_t contentEnd;
  std::string signatureLine, error;
  if (!checkSignature(opts, pre, data, size, contentEnd, signatureLine, error))
    return fail(error);
  flatbuffers::Verifier verifier(header, pre.header_size);
  if (!fb::VerifyArtifactBuffer(verifier))
    return fail("header is not a valid artifact FlatBuffer");
  const fb::Artifact *a = fb::GetArtifact(header);

  std::printf("artifact %s: %" PRIu64 " bytes, format %u, header %" PRIu64 " bytes\n",
              opts.artifact.c_str(), size, pre.format_version, pre.header_size);
  std::printf("%s\n", signatureLine.c_str());
  if (const fb::Target *t = a->target()) {
    std::printf("target: %s (%s, cpu %s), abi %u, entry %s\n  requires:", str(t->name()),
                str(t->triple()), str(t->cpu()), t->abi_version(), str(t->entry()));
    for (flatbuffers::uoffset_t i = 0; t->features() && i < t->features()->size(); ++i)
      std::printf(" %s", t->features()->Get(i)->c_str());
    std::printf("\n");
    if (t->governor())
      std::printf("  governor defaults: %s\n", t->governor()->c_str());
  }
  if (const fb::ModelConfig *c = a->config())
    std::printf("model: %s, vocab %u, dim %u, layers %u, heads %u/%u kv, head dim %u, ffn %u, "
                "context %u, rope %u dims theta %g %s, rms eps %g\n",
                str(c->arch()), c->vocab_size(), c->dim(), c->num_layers(), c->num_heads(),
                c->num_kv_heads(), c->head_dim(), c->ffn_dim(), c->context_length(),
                c->rope_dims(), c->rope_theta(), c->rope_style() ? "rotate-half" : "adjacent",
                c->rms_eps());
  const fb::Module *module = a->module_();
  if (module) {
    std::printf("module: %s '%s'%s%s, for the base artifact whose weights have xxh64 %016" PRIx64
                " (%" PRIu64 " bytes)\n",
                str(module->kind()), str(module->name()),
                module->version() && module->version()->size() ? " " : "",
                str(module->version()), module->base_weights_xxh64(),
                module->base_weights_size());
    if (module->banned_tokens() && module->banned_tokens()->size()) {
      std::printf("  bans %u tokens:", module->banned_tokens()->size());
      for (int32_t id : *module->banned_tokens())
        std::printf(" %d", id);
      std::printf("\n");
    }
  }
  if (const fb::Tokenizer *k = a->tokenizer(); k && !module) {
    std::printf("tokenizer: %s, %u tokens, bos %d eos %d unk %d\n", str(k->model()),
                k->tokens() ? k->tokens()->size() : 0, k->bos_id(), k->eos_id(), k->unk_id());
    std::printf("chat template: %s\n",
                k->chat_template() ? k->chat_template()->c_str() : "none");
  }

  const fb::Section *weights = nullptr, *code = nullptr, *gpu = nullptr;
  bool sectionsOk = true;
  std::printf("sections:\n");
  for (flatbuffers::uoffset_t i = 0; a->sections() && i < a->sections()->size(); ++i) {
    const fb::Section *s = a->sections()->Get(i);
    bool inside = s->offset() <= contentEnd && s->size() <= contentEnd - s->offset();
    bool sumOk = inside && kiln_xxh64(data + s->offset(), s->size()) == s->xxh64();
    sectionsOk &= sumOk;
    if (s->kind() == KILN_SECTION_WEIGHTS)
      weights = s;
    if (s->kind() == KILN_SECTION_CODE)
      code = s;
    if (s->kind() == KILN_SECTION_GPU && sumOk)
      gpu = s;
    std::printf("  %-8s offset %10" PRIu64 " size %10" PRIu64 " align %5u xxh64 %016" PRIx64
                " %s\n",
                s->kind() == KILN_SECTION_WEIGHTS ? "weights"
                : s->kind() == KILN_SECTION_CODE  ? "code"
                : s->kind() == KILN_SECTION_GPU   ? "gpu"
                                                  : "?",
                s->offset(), s->size(), s->alignment(), s->xxh64(),
                !inside ? "OUTSIDE THE FILE" : sumOk ? "ok" : "CHECKSUM MISMATCH");
  }

  const std::string gpuError = gpu ? printGpuProgram(data + gpu->offset(), gpu->size()) : "";

  uint64_t padding = 0, total = 0;
  bool tensorsOk = true;
  std::printf("tensors:\n  %-28s %-8s %-14s %8s %8s %10s %10s %8s  %s\n", "name", "format",
              "shape", "padded", "stride", "offset", "size", "padding", "from source");
  for (flatbuffers::uoffset_t i = 0; a->tensors() && i < a->tensors()->size(); ++i) {
    const fb::Tensor *t = a->tensors()->Get(i);
    const char *fmt = kiln_format_name(t->format());
    bool inside = weights && t->offset() <= weights->size() &&
                  t->size() <= weights->size() - t->offset();
    tensorsOk &= inside;
    padding += t->padding_bytes();
    total += t->size();
    std::printf("  %-28s %-8s %-14s %8" PRIu64 " %8" PRIu64 " %10" PRIu64 " %10" PRIu64
                " %8" PRIu64 "  %s%s\n",
                str(t->name()), fmt ? fmt : "?", shape(t->shape()).c_str(),
                t->padded_row_length(), t->row_stride(), t->offset(), t->size(),
                t->padding_bytes(), t->conversion() ? t->conversion()->c_str() : "-",
                inside ? "" : "  OUTSIDE THE WEIGHTS SECTION");
  }
  std::printf("  total %" PRIu64 " bytes of tensors, %" PRIu64 " bytes of row padding\n", total,
              padding);
  if (const fb::MemoryPlan *m = a->memory(); m && !module) {
    std::printf("memory plan: scratch %" PRIu64 " bytes, KV cache %" PRIu64 " bytes (%" PRIu64
                " per token), max batch %u, max context %u, weights read per token %" PRIu64
                " bytes\n",
                m->scratch_bytes(), m->kv_bytes(), m->kv_bytes_per_token(), m->max_batch(),
                m->max_ctx(), m->weight_bytes_per_token());
    KvFormat kv{KvElem(m->kv_k_format()), KvElem(m->kv_v_format())};
    std::printf("kv cache: %s, %" PRIu64 " bytes per token\n", kvFormatName(kv).c_str(),
                m->kv_bytes_per_token());
  }
  if (const fb::Provenance *p = a->provenance()) {
    std::printf("provenance: %s (sha256 %s), %s\n", str(p->source_file()),
                str(p->source_sha256()), str(p->compiler_version()));
    for (flatbuffers::uoffset_t i = 0; p->passes() && i < p->passes()->size(); ++i) {
      const fb::PassRecord *r = p->passes()->Get(i);
      std::printf("  %s [%s] %s\n", str(r->name()), str(r->params()), str(r->effects()));
    }
  }
  if (!sectionsOk)
    return fail("a section lies outside the file or fails its checksum");
  if (!tensorsOk)
    return fail("a tensor lies outside the weights section");
  if (!gpuError.empty())
    return fail(gpuError);
  if (!opts.source.empty()) {
    const fb::Provenance *p = a->provenance();
    if (!p || !p->source_sha256() || p->source_sha256()->size() == 0)
      return fail("the artifact records no source sha256 to check '" + opts.source + "' against");
    const std::string sha = fileSha256Hex(opts.source);
    if (sha.empty())
      return fail("cannot read the source '" + opts.source + "'");
    if (sha != p->source_sha256()->str())
      return fail("'" + opts.source + "' is not the artifact's source: its sha256 is " + sha +
                  ", the artifact was compiled from " + p->source_sha256()->str() +
                  " (artifacts from before 2026-12-02 carry a wrong sha256 for sources of "
                  "512 MiB or more: docs/artifact-format.md)");
    std::printf("source: '%s' is the artifact's source (sha256 %s)\n", opts.source.c_str(),
                sha.c_str());
  }
  if (!opts.extractCode.empty()) {
    if (int rc = extractCode(opts.extractCode, code, data))
      return rc;
  }
  return opts.chip.empty() ? 0 : printDecodeEstimate(opts, a);
}

} // namespace kiln::tool
