//===- AnalyzeCommand.cpp - kiln analyze: layer and head importance -------===//
//
//   kiln analyze MODEL --calib TEXT [--ctx C] [--chunks N] [--json OUT] [--svg OUT]
//
// Measures every layer's and head's importance on the calibration text with the fp32
// reference executor (compiler/analysis/Importance.h), prints the tables and the rank
// correlations, and writes them as JSON and as an SVG chart.
//===----------------------------------------------------------------------===//
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include "compiler/analysis/ImportanceReport.h"
#include "compiler/tools/kiln/Commands.h"
#include "compiler/tools/kiln/ModelSession.h"

namespace kiln::tool {

namespace {

// Opens an output file before the (long) measurement, so a bad path fails at once.
std::unique_ptr<llvm::raw_fd_ostream> openOutput(const std::string &path, std::string &error) {
  std::error_code ec;
  auto os = std::make_unique<llvm::raw_fd_ostream>(path, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    error = "cannot write '" + path + "': " + ec.message();
    return nullptr;
  }
  return os;
}

} // namespace

int runAnalyze(const AnalyzeOptions &opts) {
  std::ifstream in(opts.calib, std::ios::binary);
  if (!in)
    return fail("cannot read calibration text '" + opts.calib + "'");
  std::stringstream text;
  text << in.rdbuf();

  std::string error;
  std::unique_ptr<llvm::raw_fd_ostream> json, svg;
  if (!opts.json.empty() && !(json = openOutput(opts.json, error)))
    return fail(error);
  if (!opts.svg.empty() && !(svg = openOutput(opts.svg, error)))
    return fail(error);

  ModelSession s;
  if (!s.load(opts.model, error, opts.tokenizer))
    return fail(error);
  if (opts.ctx > s.declaredContext())
    std::fprintf(stderr, "kiln: warning: --ctx %u exceeds the model's declared context %u\n",
                 opts.ctx, s.declaredContext());

  analysis::CalibrationSet calib;
  calib.tokens = s.tokenizer->encode(text.str(), true);
  calib.bos = s.tokenizer->bos();
  calib.ctx = opts.ctx;
  calib.maxChunks = opts.chunks;
  if (calib.tokens.size() < opts.ctx)
    return fail("the calibration text has " + std::to_string(calib.tokens.size()) +
                " tokens, fewer than one chunk of " + std::to_string(opts.ctx) +
                " (give more text or a smaller --ctx)");
  size_t chunks = calib.tokens.size() / opts.ctx;
  if (opts.chunks && chunks > opts.chunks)
    chunks = opts.chunks;
  std::fprintf(stderr, "%s: %zu tokens, %zu chunks of %u\n", opts.calib.c_str(),
               calib.tokens.size(), chunks, opts.ctx);

  analysis::ImportanceOptions options;
  options.progress = [](const std::string &what, size_t done, size_t total) {
    std::fprintf(stderr, "[%zu/%zu %s] ", done + 1, total, what.c_str());
    if (done + 1 == total || done % 8 == 7)
      std::fprintf(stderr, "\n");
  };
  analysis::ImportanceReport report;
  auto t0 = std::chrono::steady_clock::now();
  if (!analysis::measureImportance(*s.model.module, s.model.weights, calib, report, error, options))
    return fail(error);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  analysis::printImportanceTables(report, llvm::outs());
  llvm::outs() << llvm::format("\nanalyzed in %.2f s\n", seconds);
  llvm::outs().flush();

  analysis::ReportSource src{opts.model, opts.calib, calib.tokens.size(), seconds};
  auto finish = [&](llvm::raw_fd_ostream &os, const std::string &path) {
    os.close();
    if (!os.has_error())
      return true;
    error = "cannot write '" + path + "': " + os.error().message();
    os.clear_error();
    return false;
  };
  if (json) {
    analysis::writeImportanceJson(report, src, *json);
    if (!finish(*json, opts.json))
      return fail(error);
  }
  if (svg) {
    analysis::writeImportanceSvg(report, src, *svg);
    if (!finish(*svg, opts.svg))
      return fail(error);
  }
  return 0;
}

} // namespace kiln::tool
