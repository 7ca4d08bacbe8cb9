//===- Perplexity.h - llama.cpp-compatible perplexity and model comparison -===//
//
// Same method as llama.cpp's perplexity tool: the text is tokenised once with BOS and
// cut into floor(n / ctx) chunks of ctx tokens; each chunk starts with BOS in place of its
// first token and is evaluated from an empty cache; only the second half is scored
// (logits at positions ctx/2 .. ctx-2 predict the next token). PPL = exp(mean NLL).
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_EVAL_PERPLEXITY_H
#define KILN_COMPILER_EVAL_PERPLEXITY_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {

class RefExecutor;

struct PerplexityResult {
  size_t chunks = 0;
  size_t scored = 0;         // predictions scored
  double meanNll = 0;
  double ppl = 0;
  double pplStderr = 0;      // from the NLL standard error, as llama.cpp prints
  double top1Accuracy = 0;   // argmax == the text's next token
  // Only with a comparison model:
  double top1Agreement = 0;  // argmax of both models equal
  double meanKld = 0;        // mean KL(P_model || P_compare), nats
  double meanKldReverse = 0; // mean KL(P_compare || P_model): llama.cpp's direction when
                             // the compare model is the f32 reference
  double compareMeanNll = 0;
  double comparePpl = 0;
};

// log-softmax of one row in double: log p_i = x_i - max - log(sum exp(x - max)).
void logSoftmax(const float *x, int32_t n, std::vector<double> &out);

// `compare` may be null. `progress` (may be empty) is called after each chunk.
bool perplexity(RefExecutor &model, RefExecutor *compare, const std::vector<int32_t> &tokens,
                int32_t bos, uint32_t ctx, size_t maxChunks, PerplexityResult &out,
                std::string &error,
                const std::function<void(size_t chunk, double pplSoFar)> &progress = {});

} // namespace kiln

#endif // KILN_COMPILER_EVAL_PERPLEXITY_H
