//===- DenseLinalg.h - the fp32 products and factorisations of GPTQ ---------===//
//
// What calibration-aware rounding spends its time in at a 1B shape: the inputs' second
// moment H += X^T X, the Cholesky factor of H, a triangular inverse and GPTQ's lazy-batch
// updates C -= A B. Eigen's versions run single-threaded with the compiler's baseline
// SSE2 (an AVX2 Eigen in one translation unit would share template symbols with the
// SSE2 ones elsewhere). These pick AVX-512 or AVX2 with FMA at run time, and split
// independent blocks over threads.
// Every element is computed the same way on every path and thread count: a product's
// terms by fused multiply-add from zero in k order, in chunks of a fixed length, then
// added to C; everything else without contraction. So the codes GPTQ writes do not depend
// on the machine that compiles. (On an x86 CPU without FMA the portable path's std::fma
// is a library call: the same bits, slower.)
// Matrices are row-major with a row stride (ld) in elements. No MLIR, no Eigen.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_WEIGHTS_DENSELINALG_H
#define KILN_MODELS_WEIGHTS_DENSELINALG_H

#include <cstddef>

namespace kiln::linalg {

// C (m x n) += A (m x k) B (k x n), or -= with subtract.
void addProduct(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
                size_t m, size_t n, size_t k, bool subtract);

// y -= a x over n elements (a multiply, then a subtraction).
void subtractScaled(float *y, const float *x, float a, size_t n);

// The lower triangle of H (n x n) += X^T X for X of `rows` rows of n values; the upper
// triangle is scratch.
void addGram(float *h, size_t n, const float *x, size_t rows, unsigned threads);

// A = L L^T in place: the lower triangle of A (n x n) becomes L, the upper triangle is
// scratch. False (A partly overwritten) if A is not positive definite in fp32.
bool choleskyLower(float *a, size_t n, unsigned threads);

// X = L^-1 for the lower triangle of L (n x n); X is lower triangular, zero above.
void lowerInverse(const float *l, float *x, size_t n, unsigned threads);

// Tests: take a CPU's path without AVX-512 (Avx2) or without AVX2 (Portable).
enum class KernelPath { Best, Avx2, Portable };
void capKernelPath(KernelPath path);

} // namespace kiln::linalg

#endif // KILN_MODELS_WEIGHTS_DENSELINALG_H
