//===- LoweringWeights.h - the weights a back end's lowering stores -------===//
//
// A lowering packs the weights the code reads as it lowers, since their offsets become
// constants of the code (TargetBackend::addLoweringPasses). kiln compile gives it the
// weight store and takes the packed section back; kiln-opt runs it without either.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_COMMON_LOWERINGWEIGHTS_H
#define KILN_CODEGEN_COMMON_LOWERINGWEIGHTS_H

#include <cstdint>
#include <functional>
#include <string>

#include "codegen/common/WeightLayout.h"
#include "models/weights/WeightStore.h"

namespace kiln::codegen {

struct LoweringWeights {
  const WeightStore *store = nullptr; // null: zero stand-ins of each weight's shape
  // Builds a weight the store does not hold yet (kiln compile's derived weights, made one
  // at a time so the fp32 stacked weights never exist all at once); `release` drops it
  // again once the layout has packed it. Unset: every weight must be in the store.
  std::function<bool(const std::string &name, std::string &error)> materialize;
  std::function<void(const std::string &name)> release;

  // Out: the weights section, and what it reads per decoded token (every matrix once,
  // one embedding row, the norms).
  WeightLayout layout;
  uint64_t bytesPerToken = 0;
  uint32_t vocab = 0;

  // In: also export each op as `kiln_model_op_<k>` (k its place in @forward), with the
  // entry's signature: a GPU backend runs the ops its device lacks on the CPU with them
  // (docs/vulkan.md, "Placement"). Off: the code is unchanged.
  bool opEntries = false;
};

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_LOWERINGWEIGHTS_H
