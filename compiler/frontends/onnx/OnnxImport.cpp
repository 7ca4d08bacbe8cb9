#include "compiler/frontends/onnx/OnnxImport.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "compiler/frontends/onnx/OnnxFold.h"
#include "compiler/frontends/onnx/OnnxLoad.h"
#include "compiler/frontends/onnx/OnnxToLlama.h"
#include "compiler/frontends/onnx/raise/Raise.h"
#include "models/ModelFamilies.h"
#include "models/llama/LlamaGguf.h"

namespace kiln::onnx {

bool looksLikeOnnx(const std::string &path) {
  auto endsWith = [&](const char *s) {
    size_t n = std::char_traits<char>::length(s);
    return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
  };
  return endsWith(".onnx") || endsWith(".onnxtxt");
}

namespace {

std::unique_ptr<Graph> loadAndRaise(const std::string &path, bool raise,
                                    std::map<std::string, int> &counts, std::string &error) {
  std::unique_ptr<Graph> g = loadOnnx(path, error);
  if (!g || !foldConstants(*g, error))
    return nullptr;
  if (raise && !raiseGraph(*g, counts, error))
    return nullptr;
  return g;
}

// config.json beside the model (Hugging Face / Optimum layout): the context length, which
// the graph does not hold, and every hyper-parameter the graph does hold, checked against
// what raising found. Absent: the context defaults to 2048 and says so.
bool applyHfConfig(const std::string &modelPath, llama::LlamaConfig &cfg, std::string &error) {
  size_t slash = modelPath.find_last_of('/');
  std::string path = (slash == std::string::npos ? "" : modelPath.substr(0, slash + 1)) +
                     "config.json";
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) {
    std::fprintf(stderr, "kiln: note: no config.json beside '%s'; context length %u "
                 "(set --ctx)\n", modelPath.c_str(), cfg.contextLength);
    return true;
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse((*buf)->getBuffer());
  const llvm::json::Object *o = json ? json->getAsObject() : nullptr;
  if (!o) {
    if (!json)
      llvm::consumeError(json.takeError());
    error = "'" + path + "' is not a JSON object";
    return false;
  }
  if (auto ctx = o->getInteger("max_position_embeddings")) {
    if (*ctx <= 0 || *ctx > (1 << 24)) {
      error = "'" + path + "': max_position_embeddings " + std::to_string(*ctx) + " is out of range";
      return false;
    }
    cfg.contextLength = uint32_t(*ctx);
  }
  struct Check { const char *key; double graph; } checks[] = {
      {"hidden_size", double(cfg.dim)},           {"intermediate_size", double(cfg.ffnDim)},
      {"num_hidden_layers", double(cfg.numLayers)}, {"num_attention_heads", double(cfg.numHeads)},
      {"num_key_value_heads", double(cfg.numKvHeads)}, {"vocab_size", double(cfg.vocabSize)},
      {"rope_theta", double(cfg.ropeTheta)},      {"rms_norm_eps", double(cfg.rmsEps)}};
  for (const Check &c : checks) {
    std::optional<double> v = o->getNumber(c.key);
    if (v && std::fabs(*v - c.graph) > 1e-6 * std::fabs(c.graph)) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "'%s' says %s = %g but the graph computes %g",
                    path.c_str(), c.key, *v, c.graph);
      error = buf;
      return false;
    }
  }
  return true;
}

} // namespace

bool importOnnxStage(const std::string &path, bool raise, std::string &listing,
                     std::string &error) {
  std::map<std::string, int> counts;
  std::unique_ptr<Graph> g = loadAndRaise(path, raise, counts, error);
  if (!g)
    return false;
  listing = printGraph(*g);
  if (raise) {
    listing += "raised:";
    for (const auto &[name, n] : counts)
      listing += " " + name + "=" + std::to_string(n);
    listing += "\n";
  }
  return true;
}

bool importOnnx(const std::string &path, mlir::MLIRContext &ctx, gguf::ImportedModel &out,
                std::string &error) {
  std::map<std::string, int> counts;
  std::unique_ptr<Graph> g = loadAndRaise(path, true, counts, error);
  if (!g)
    return false;
  if (!assembleLlama(*g, out.config, out.weights, error)) {
    error = "'" + path + "': " + error;
    return false;
  }
  if (!applyHfConfig(path, out.config, error))
    return false;
  out.source = std::shared_ptr<Graph>(std::move(g));
  // The same road as a GGUF file's: the raised config as the family's keys, the weights
  // under their GGUF names (Llama 3 RoPE scaling as rope_freqs.weight, as llama.cpp's
  // converter writes it), through the family registry.
  if (!out.config.ropeFreqFactors.empty())
    out.weights.addOwnedF32("rope_freqs.weight", {out.config.ropeFreqFactors.size()},
                            out.config.ropeFreqFactors);
  const models::Metadata metadata = llama::metadataFromConfig(out.config);
  const models::ModelSource source{&metadata, &out.weights};
  const models::ModelFamily *family = models::findModelFamily(source.architecture());
  if (!family) {
    error = "internal error: no model family for '" + source.architecture() + "'";
    return false;
  }
  out.module = family->build(source, ctx, error);
  return bool(out.module);
}

} // namespace kiln::onnx
