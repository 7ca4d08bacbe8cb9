//===- SyntheticAdapter.h - deterministic random LoRA adapters and heads --===//
//
// Test modules for a Llama model (kiln/module.h): a LoRA adapter in llama.cpp's GGUF form
// (compiler/frontends/gguf/GgufAdapter.h) for the matrices named by `targets` in every
// layer, or a head file (output_norm.weight and, untied, output.weight) perturbed from the
// base's. Same base + options => same bytes. No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_LLAMA_SYNTHETICADAPTER_H
#define KILN_MODELS_LLAMA_SYNTHETICADAPTER_H

#include <cstdint>
#include <string>
#include <vector>

#include "models/ModelWriter.h"
#include "models/weights/WeightStore.h"

namespace kiln::llama {

struct SyntheticAdapterOptions {
  bool head = false;         // a head file instead of a LoRA adapter
  uint32_t rank = 4;
  float alpha = 8;           // adapter.lora.alpha; scale alpha / rank
  uint64_t seed = 1;
  // Per-layer matrices ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
  // "ffn_down") and/or "output"; each must exist in the base.
  std::vector<std::string> targets = {"attn_q", "attn_v"};
  float magnitude = 0.05f;   // B's entries (adapter) or the relative change (head)
};

bool addSyntheticAdapter(models::ModelWriter &w, const WeightStore &base,
                         const std::string &architecture, const SyntheticAdapterOptions &opts,
                         std::string &error);

} // namespace kiln::llama

#endif // KILN_MODELS_LLAMA_SYNTHETICADAPTER_H
