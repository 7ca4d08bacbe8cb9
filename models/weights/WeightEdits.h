//===- WeightEdits.h - LoRA merges and tensor replacements in a store -----===//
//
// What a module compile (kiln/module.h: adapters, heads) does to the source weights before
// the passes run: each edited tensor is decoded, changed in fp32 and written back in the
// format the file stored it in, so the precision passes and the weight layout see the
// same formats as for the base model, and the module's tensors have the base's layout.
// No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_WEIGHTS_WEIGHTEDITS_H
#define KILN_MODELS_WEIGHTS_WEIGHTEDITS_H

#include <string>
#include <vector>

#include "models/weights/WeightStore.h"

namespace kiln {

// One adapted matrix of a LoRA adapter, as llama.cpp stores it: `a` has ggml dims
// [in, rank], `b` [rank, out], for a target of dims [in, out]; W += scale * B A.
struct LoraDelta {
  std::string target; // "blk.0.attn_q.weight"
  WeightView a, b;
};

// Decodes any view to fp32, row-major [numRows, rowLength].
bool decodeView(const WeightView &v, std::vector<float> &out, std::string &error);

// Replaces tensor `name` by `values` (fp32, the tensor's shape), written in the tensor's
// current storage format with runtime-min's quantizers.
bool replaceKeepingFormat(WeightStore &store, const std::string &name,
                          const std::vector<float> &values, std::string &error);

// Merges every delta into its target. `alpha` is the adapter's adapter.lora.alpha: the
// scale is userScale * alpha / rank, or userScale when alpha is 0 (llama.cpp's rule).
// Fails, naming the tensor, on a missing target, mismatched shapes or the token embedding
// (whose A and B llama.cpp stores transposed; not supported).
bool mergeLora(WeightStore &store, const std::vector<LoraDelta> &deltas, float alpha,
               float userScale, std::string &error);

} // namespace kiln

#endif // KILN_MODELS_WEIGHTS_WEIGHTEDITS_H
