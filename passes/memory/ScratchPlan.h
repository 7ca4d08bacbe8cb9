//===- ScratchPlan.h - static scratch placement for activations ------------===//
//
// Every activation buffer lives at a fixed offset of one scratch block, decided at
// compile time from the buffers' live ranges (first-fit, 64-byte aligned), so the
// runtime allocates once and never on the decode path. No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_MEMORY_SCRATCHPLAN_H
#define KILN_PASSES_MEMORY_SCRATCHPLAN_H

#include <cstdint>
#include <vector>

namespace kiln::memory {

struct BufferRequest {
  uint64_t bytes = 0;
  int64_t firstUse = 0; // index of the op that writes it
  int64_t lastUse = 0;  // index of the last op that reads it
};

struct ScratchPlan {
  std::vector<uint64_t> offsets; // one per request
  uint64_t totalBytes = 0;
  uint64_t naiveBytes = 0;       // without reuse, for the report
};

ScratchPlan planScratch(const std::vector<BufferRequest> &requests);

} // namespace kiln::memory

#endif // KILN_PASSES_MEMORY_SCRATCHPLAN_H
