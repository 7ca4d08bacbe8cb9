//===- PrecisionKnapsack.h - one format per tensor under a byte budget ----===//
//
// A multiple-choice knapsack: each tensor (item) takes exactly one of its formats
// (options), each option has a size in bytes and a predicted loss (its measured KLD);
// minimise the summed loss with the summed bytes <= budget. Solved exactly by dynamic
// programming over bytes in units of `unit` bytes. Each option's size is rounded UP to
// whole units and the budget DOWN, so a returned choice always fits the real budget; with
// unit 1 it is the exact optimum, with a coarser unit it is optimal for the rounded sizes.
// No MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_PIPELINES_PRECISIONKNAPSACK_H
#define KILN_COMPILER_PIPELINES_PRECISIONKNAPSACK_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::pipelines {

struct KnapsackItem {
  std::vector<uint64_t> bytes; // per option
  std::vector<double> loss;    // per option, same length
};

// The unit that keeps the table at about `cells` entries per item (>= 1 byte).
uint64_t knapsackUnit(uint64_t budget, uint64_t cells = 1u << 20);

// `choice[i]` = the option picked for item i. One-line error when no choice fits (naming
// the smallest possible total) or an item has no options.
bool solveKnapsack(const std::vector<KnapsackItem> &items, uint64_t budget, uint64_t unit,
                   std::vector<size_t> &choice, std::string &error);

} // namespace kiln::pipelines

#endif // KILN_COMPILER_PIPELINES_PRECISIONKNAPSACK_H
