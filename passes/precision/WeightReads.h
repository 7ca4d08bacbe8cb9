//===- WeightReads.h - the ops that read a weight and their storage format -===//
#ifndef KILN_PASSES_PRECISION_WEIGHTREADS_H
#define KILN_PASSES_PRECISION_WEIGHTREADS_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class Operation;
class ModuleOp;
} // namespace mlir

namespace kiln::precision {

// One op that reads a weight whose format precision assignment decides: embed, linear,
// logits (the matrix; a linear's bias stays f32) and rms_norm (the scale).
struct WeightRead {
  mlir::Operation *op = nullptr;
  std::string kind;   // "embed", "linear", "logits", "rms_norm"
  std::string weight; // the weight's name
};
std::vector<WeightRead> weightReads(mlir::ModuleOp module);

// The op's storage format (ggml id); an rms_norm without one reads f32.
uint32_t formatOf(mlir::Operation *op);
// Sets it; an rms_norm's f32 is written as no attribute (the IR's default).
void setFormat(mlir::Operation *op, uint32_t format);

} // namespace kiln::precision

#endif // KILN_PASSES_PRECISION_WEIGHTREADS_H
