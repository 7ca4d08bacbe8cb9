#include "compiler/tools/kiln/LlamaShapes.h"

#include "compiler/tools/kiln/Commands.h"

#include "kiln/quant.h"
#include "kiln/quant_packed.h"

namespace kiln::tool {

namespace {

// Bytes of `rows` rows of `rowLength` elements in `format`; `linear`: the default layout
// of a linear/logits weight (kiln-assign-layout, codegen/common/WeightLayout.cpp).
uint64_t stored(uint32_t format, uint64_t rowLength, uint64_t rows, bool linear) {
  const uint64_t block = kiln_ggml_block_elems(format);
  const uint64_t padded = (rowLength + block - 1) / block * block;
  const uint64_t rowBytes = padded / block * kiln_ggml_block_bytes(format);
  if (linear && kiln_is_packed_r16(format + 1000u))
    return (rows + 15) / 16 * kiln_packed_group_bytes(format + 1000u, padded);
  if (linear)
    return (rowBytes + 63) / 64 * 64 * rows;
  return rowBytes * rows;
}

} // namespace

const std::vector<LlamaShape> &knownLlamaShapes() {
  static const std::vector<LlamaShape> shapes = {
      {"llama-3.2-1b", 2048, 16, 32, 8, 8192, 128256, true,
       "meta-llama/Llama-3.2-1B config.json (Hugging Face)"},
      {"llama-3.2-3b", 3072, 28, 24, 8, 8192, 128256, true,
       "meta-llama/Llama-3.2-3B config.json (Hugging Face)"},
      {"llama-3.1-8b", 4096, 32, 32, 8, 14336, 128256, false,
       "meta-llama/Llama-3.1-8B config.json (Hugging Face)"},
      {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, false,
       "TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json (Hugging Face)"},
  };
  return shapes;
}

const LlamaShape *findLlamaShape(const std::string &name) {
  for (const LlamaShape &s : knownLlamaShapes())
    if (s.name == name)
      return &s;
  return nullptr;
}

std::string checkLlamaShape(const LlamaShape &s) {
  if (!s.dim || !s.layers || !s.heads || !s.kvHeads || !s.ffn || !s.vocab)
    return "every hyper-parameter (dim, layers, heads, kv-heads, ffn, vocab) must be positive";
  if (s.dim % s.heads)
    return "heads (" + std::to_string(s.heads) + ") must divide dim (" + std::to_string(s.dim) + ")";
  if (s.heads % s.kvHeads)
    return "kv-heads (" + std::to_string(s.kvHeads) + ") must divide heads (" +
           std::to_string(s.heads) + ")";
  return "";
}

uint64_t decodeWeightBytes(const LlamaShape &s, const precision::Rules &f) {
  const uint64_t kvDim = s.dim / s.heads * s.kvHeads;
  const uint32_t norm = f.formatOf("norms");
  uint64_t bytes = 0;
  for (uint64_t l = 0; l < s.layers; ++l) {
    bytes += 2 * stored(norm, s.dim, 1, false);
    bytes += stored(f.formatOf("attn_q"), s.dim, s.dim, true);
    bytes += stored(f.formatOf("attn_k"), s.dim, kvDim, true);
    bytes += stored(f.formatOf("attn_v"), s.dim, kvDim, true);
    bytes += stored(f.formatOf("attn_output"), s.dim, s.dim, true);
    bytes += stored(f.formatOf("ffn_gate"), s.dim, s.ffn, true);
    bytes += stored(f.formatOf("ffn_up"), s.dim, s.ffn, true);
    bytes += stored(f.formatOf("ffn_down"), s.ffn, s.dim, true);
  }
  bytes += stored(norm, s.dim, 1, false);
  const uint32_t embed = f.formatOf("embedding"), output = f.formatOf("output");
  // A tied classifier in the embedding's format is the embedding's tensor: in 16-row groups
  // where the format has them, else rows unpacked. Embed reads one row, or one row of a
  // group, whose bytes are spread over the group's cache lines: the group.
  const bool tiedGroups = s.tied && output == embed && kiln_is_packed_r16(output + 1000u);
  bytes += stored(embed, s.dim, 1, tiedGroups);
  bytes += stored(output, s.dim, s.vocab, tiedGroups || !(s.tied && output == embed));
  return bytes;
}

uint64_t kvBytesPerPosition(const LlamaShape &s, KvFormat kv) {
  return s.layers * kvBytesPerTokenLayer(kv, s.kvHeads, s.dim / s.heads);
}

uint64_t decodeMacs(const LlamaShape &s, uint64_t ctx) {
  const uint64_t headDim = s.dim / s.heads, kvDim = s.kvHeads * headDim;
  const uint64_t perLayer = s.dim * s.dim * 2 + s.dim * kvDim * 2 + s.dim * s.ffn * 3 +
                            2 * ctx * s.heads * headDim;
  return s.layers * perLayer + s.vocab * s.dim;
}

bool resolvePredictModel(const PredictOptions &opts, LlamaShape &shape, precision::Rules &rules,
                         KvFormat &kv, std::string &error) {
  if (!opts.shape.empty()) {
    const LlamaShape *known = findLlamaShape(opts.shape);
    if (!known) {
      std::string joined;
      for (const LlamaShape &s : knownLlamaShapes())
        joined += (joined.empty() ? "" : ", ") + s.name;
      error = "unknown shape '" + opts.shape + "' (known: " + joined +
              "; or give --dim --layers --heads --kv-heads --ffn --vocab)";
      return false;
    }
    shape = *known;
  } else if (opts.dim == 0) {
    error = "give --shape NAME or the hyper-parameters --dim --layers --heads --kv-heads "
            "--ffn --vocab [--tied]";
    return false;
  } else {
    shape = {"custom", opts.dim, opts.layers, opts.heads, opts.kvHeads, opts.ffn, opts.vocab,
             opts.tied, "the command line"};
  }
  if (std::string problem = checkLlamaShape(shape); !problem.empty()) {
    error = problem;
    return false;
  }
  // --weights F (uniform) or --precision uniform:F | rules:...; norms stay f32 unless named.
  rules = precision::Rules();
  std::string spec = opts.precision.empty() ? "uniform:" + opts.weights : opts.precision;
  if (spec.rfind("uniform:", 0) == 0) {
    if (!precision::parseFormat(spec.substr(8), rules.defaultFormat)) {
      error = "unknown format '" + spec.substr(8) + "' (expected f32, f16, q8_0, q4_0 or q4_1)";
      return false;
    }
  } else if (spec.rfind("rules:", 0) == 0) {
    if (!precision::parseRules(spec.substr(6), rules, error))
      return false;
  } else {
    error = "--precision takes uniform:FMT or rules:CLASS=FMT,... here, not '" + spec + "'";
    return false;
  }
  bool normsNamed = false;
  rules.formatOf("norms", &normsNamed);
  if (!normsNamed)
    rules.byClass["norms"] = KILN_GGML_TYPE_F32;
  return parseKvFormat(opts.kv, kv, error);
}

} // namespace kiln::tool
