#include "compiler/frontends/onnx/OnnxImport.h"

#include <fstream>

#include "compiler/frontends/onnx/OnnxFold.h"
#include "compiler/frontends/onnx/OnnxLoad.h"
#include "compiler/frontends/onnx/OnnxToLlama.h"
#include "compiler/frontends/onnx/raise/Raise.h"
#include "models/llama/LlamaBuilder.h"

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
  out.source = std::shared_ptr<Graph>(std::move(g));
  out.module = llama::buildLlama(ctx, out.config, out.weights, error);
  return bool(out.module);
}

} // namespace kiln::onnx
