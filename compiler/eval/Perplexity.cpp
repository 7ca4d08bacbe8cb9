#include "compiler/eval/Perplexity.h"

#include <cmath>

#include "compiler/eval/RefExecutor.h"
#include "compiler/eval/Sampler.h"

namespace kiln {

void logSoftmax(const float *x, int32_t n, std::vector<double> &out) {
  out.resize(size_t(n));
  double mx = x[0];
  for (int32_t i = 1; i < n; ++i)
    mx = std::max<double>(mx, x[i]);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i)
    sum += std::exp(double(x[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int32_t i = 0; i < n; ++i)
    out[size_t(i)] = double(x[i]) - lse;
}

bool perplexity(RefExecutor &model, RefExecutor *compare, const std::vector<int32_t> &tokens,
                int32_t bos, uint32_t ctx, size_t maxChunks, PerplexityResult &out,
                std::string &error,
                const std::function<void(size_t, double)> &progress) {
  if (ctx < 4) {
    error = "context " + std::to_string(ctx) + " is too small to score (need at least 4)";
    return false;
  }
  size_t chunks = tokens.size() / ctx;
  if (maxChunks && chunks > maxChunks)
    chunks = maxChunks;
  if (chunks == 0) {
    error = "the text has " + std::to_string(tokens.size()) + " tokens, fewer than one chunk of " +
            std::to_string(ctx);
    return false;
  }
  if (compare && compare->vocabSize() != model.vocabSize()) {
    error = "the comparison model's vocabulary differs";
    return false;
  }
  const int32_t vocab = int32_t(model.vocabSize());
  const uint32_t first = ctx / 2;
  double nll = 0, nll2 = 0, cmpNll = 0, kld = 0, kldReverse = 0;
  size_t n = 0, hits = 0, agree = 0;
  Matrix logits, cmpLogits;
  std::vector<double> lp, lq;
  for (size_t c = 0; c < chunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + long(c * ctx),
                               tokens.begin() + long((c + 1) * ctx));
    chunk[0] = bos;
    model.resetCache();
    if (!model.forward(chunk, 0, logits, error))
      return false;
    if (compare) {
      compare->resetCache();
      if (!compare->forward(chunk, 0, cmpLogits, error))
        return false;
    }
    for (uint32_t j = first; j + 1 < ctx; ++j) {
      const int32_t next = chunk[j + 1];
      const float *row = logits.row(j).data();
      logSoftmax(row, vocab, lp);
      const double l = -lp[size_t(next)];
      nll += l;
      nll2 += l * l;
      ++n;
      int32_t top = argmax(row, vocab);
      hits += top == next;
      if (compare) {
        const float *crow = cmpLogits.row(j).data();
        logSoftmax(crow, vocab, lq);
        cmpNll += -lq[size_t(next)];
        double kl = 0, klr = 0;
        for (int32_t i = 0; i < vocab; ++i) {
          kl += std::exp(lp[size_t(i)]) * (lp[size_t(i)] - lq[size_t(i)]);
          klr += std::exp(lq[size_t(i)]) * (lq[size_t(i)] - lp[size_t(i)]);
        }
        kld += kl;
        kldReverse += klr;
        agree += argmax(crow, vocab) == top;
      }
    }
    if (progress)
      progress(c, std::exp(nll / double(n)));
  }
  out.chunks = chunks;
  out.scored = n;
  out.meanNll = nll / double(n);
  out.ppl = std::exp(out.meanNll);
  const double var = nll2 / double(n) - out.meanNll * out.meanNll;
  out.pplStderr = n > 1 ? out.ppl * std::sqrt(std::max(var, 0.0) / double(n - 1)) : 0;
  out.top1Accuracy = double(hits) / double(n);
  if (compare) {
    out.compareMeanNll = cmpNll / double(n);
    out.comparePpl = std::exp(out.compareMeanNll);
    out.meanKld = kld / double(n);
    out.meanKldReverse = kldReverse / double(n);
    out.top1Agreement = double(agree) / double(n);
  }
  return true;
}

} // namespace kiln
