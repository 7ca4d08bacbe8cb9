#include "compiler/pipelines/CalibrationKld.h"

#include <cmath>

#include "compiler/eval/Perplexity.h"
#include "compiler/eval/RefExecutor.h"

using namespace mlir;

namespace kiln::pipelines {

bool CalibrationKld::init(ModuleOp reference, std::string &error) {
  size_t n = calib.tokens.size() / calib.ctx;
  if (calib.maxChunks && n > calib.maxChunks)
    n = calib.maxChunks;
  if (n == 0 || calib.ctx < 4) {
    error = "the calibration text has no chunk of " + std::to_string(calib.ctx) + " tokens";
    return false;
  }
  for (size_t c = 0; c < n; ++c) {
    chunks.emplace_back(calib.tokens.begin() + long(c * calib.ctx),
                        calib.tokens.begin() + long((c + 1) * calib.ctx));
    chunks.back()[0] = calib.bos;
  }
  return run(reference, nullptr, error);
}

bool CalibrationKld::run(ModuleOp module, double *kldOut, std::string &error) {
  auto exec = RefExecutor::create(module, store, calib.ctx, error);
  if (!exec)
    return false;
  const int32_t vocab = int32_t(exec->vocabSize());
  const uint32_t first = calib.ctx / 2;
  Matrix logits;
  std::vector<double> lq;
  size_t row = 0;
  double sum = 0;
  for (const std::vector<int32_t> &chunk : chunks) {
    exec->resetCache();
    if (!exec->forward(chunk, 0, logits, error))
      return false;
    for (uint32_t j = first; j + 1 < calib.ctx; ++j, ++row) {
      logSoftmax(logits.row(j).data(), vocab, lq);
      if (!kldOut) { // the reference: keep log p and p
        logP.insert(logP.end(), lq.begin(), lq.end());
        for (double x : lq)
          p.push_back(std::exp(x));
        continue;
      }
      const double *lp = logP.data() + row * size_t(vocab), *pp = p.data() + row * size_t(vocab);
      double kl = 0;
      for (int32_t i = 0; i < vocab; ++i)
        kl += pp[i] * (lp[i] - lq[size_t(i)]);
      sum += kl;
    }
  }
  if (kldOut)
    *kldOut = sum / double(row);
  else
    rows = row;
  return true;
}

} // namespace kiln::pipelines
