//===- HadamardRotation.h - the residual stream's orthogonal rotation --------===//
//
// Q = H D / sqrt(n): D a diagonal of random signs drawn from a seed, H an n x n Hadamard
// matrix: Walsh-Hadamard for n a power of two, else H_m (x) H_p with p a power of two and
// H_m Paley's construction of order m = q + 1 (q a prime, q = 3 mod 4), which covers the
// widths of the Llama family (3072 = 12 x 256, 5120 = 20 x 256). Q is orthogonal, so a
// rotated residual stream Q x gives the same model once every weight that reads it takes
// W Q^T and every weight that writes it Q W (QuaRot, Ashkboos et al. 2024): what a
// rotation changes is only how the weights quantise. O(n (log p + m)) per vector.
// No MLIR; deterministic for a seed.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_WEIGHTS_HADAMARDROTATION_H
#define KILN_MODELS_WEIGHTS_HADAMARDROTATION_H

#include <cstddef>
#include <cstdint>

namespace kiln::rotation {

bool isPowerOfTwo(uint64_t n);
// Whether a Hadamard matrix of order n is built here (see above).
bool isSupported(uint64_t n);

// x <- Q x for one vector of n values (isSupported(n)), in place.
void rotate(float *x, size_t n, uint64_t seed);

// Every row of W (rows x cols, row-major) rotated: W <- W Q^T (Q of size cols).
void rotateRowsOf(float *w, size_t rows, size_t cols, uint64_t seed);
// Every column of W rotated: W <- Q W (Q of size rows).
void rotateColumnsOf(float *w, size_t rows, size_t cols, uint64_t seed);

} // namespace kiln::rotation

#endif // KILN_MODELS_WEIGHTS_HADAMARDROTATION_H
