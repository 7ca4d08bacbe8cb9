//===- CalibratedQuant.h - rounding a weight with its inputs' statistics ----===//
//
// runtime-min's encoders (kiln_quantize) round each block to nearest from the weights
// alone. Here the rounding knows what the weight is multiplied with: H = sum over the
// calibration positions of x x^T for the inputs x of the matrix (cols x cols).
//   weighted  every block's scale (and minimum) is searched to minimise
//             sum_j H_jj (w_j - q_j)^2, the diagonal importance of llama.cpp's imatrix,
//             instead of taken from the largest element;
//   gptq      the same search, plus second-order error compensation column by column
//             (GPTQ, Frantar et al. 2022): after column j is rounded, the rounding error
//             is spread over the columns not yet rounded through the Cholesky factor of
//             H^-1, so the output error ||(W - Q) X|| is what is minimised, not ||W - Q||.
// Blocks of 32 (q8_0, q4_0, q4_1, q3_0): the codes are written exactly as the format's
// decoder reads them (kiln/quant_blocks.h). The K-quants keep runtime-min's encoders.
// No MLIR; deterministic for a given input (threads split rows, which are independent).
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_WEIGHTS_CALIBRATEDQUANT_H
#define KILN_MODELS_WEIGHTS_CALIBRATEDQUANT_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::quant {

enum class Rounding { Nearest, Weighted, Gptq };

// "nearest" | "weighted" | "gptq"; false for anything else.
bool parseRounding(const std::string &text, Rounding &out);
const char *roundingName(Rounding r);

// Formats with a calibrated encoder (the 32-element block formats kiln stores).
bool hasCalibratedEncoder(uint32_t format);

// Second moment of a matrix's inputs: H = sum of x x^T, cols x cols, row-major, fp32;
// only the lower triangle is kept.
struct InputStats {
  uint64_t cols = 0;
  uint64_t samples = 0;
  std::vector<float> h;
  void add(const float *x, uint64_t n); // n rows of cols values
};

// What rounding needs of one input, shared by every matrix that reads it (q, k and v):
// each column's importance (H's damped diagonal), the order GPTQ rounds columns in
// (descending H_jj, "act order") and U, upper triangular with H^-1 = U^T U (gptq only).
struct RoundingPlan {
  Rounding rounding = Rounding::Nearest;
  uint64_t cols = 0, paddedCols = 0;
  std::vector<float> importance;  // paddedCols, H_jj / mean + 1%; 0 for padding
  std::vector<uint64_t> order;    // paddedCols column indices
  std::vector<float> u;           // paddedCols^2, row-major (gptq)
  // stats null: identity importance. One-line error (stats of another width, an H that
  // damping cannot make positive definite).
  static bool make(Rounding rounding, const InputStats *stats, uint64_t cols,
                   RoundingPlan &plan, std::string &error);
};

// Encodes `rows` rows of `cols` fp32 values in `format` with rows padded by zeros to whole
// blocks (paddedCols; the padded inputs are zero, so padding stays exactly 0 where the
// format has a zero). `stats` may be null (identity importance: weighted/gptq then search
// scales for the plain squared error). Nearest calls kiln_quantize. One-line error (an
// unsupported format, stats of another width).
bool encodeCalibrated(uint32_t format, Rounding rounding, const float *w, uint64_t rows,
                      uint64_t cols, const InputStats *stats, std::vector<uint8_t> &out,
                      uint64_t &paddedCols, std::string &error);
// The same with a plan made once for the input (RoundingPlan::make; its rounding).
bool encodeCalibrated(uint32_t format, const RoundingPlan &plan, const float *w,
                      uint64_t rows, uint64_t cols, std::vector<uint8_t> &out,
                      uint64_t &paddedCols, std::string &error);

} // namespace kiln::quant

#endif // KILN_MODELS_WEIGHTS_CALIBRATEDQUANT_H
