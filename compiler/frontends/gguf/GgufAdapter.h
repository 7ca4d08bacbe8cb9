//===- GgufAdapter.h - LoRA adapter and head files in GGUF ----------------===//
//
// A LoRA adapter as llama.cpp's convert_lora_to_gguf.py writes it: general.type
// "adapter", adapter.type "lora", adapter.lora.alpha (f32; 0 or absent: no alpha/rank
// scaling), general.architecture of the base, and for each adapted weight W two tensors
// "<W>.lora_a" (ggml dims [in, rank]) and "<W>.lora_b" ([rank, out]). A head file holds
// replacements for a model's output_norm.weight and/or output.weight and nothing else.
// No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_GGUF_GGUFADAPTER_H
#define KILN_FRONTENDS_GGUF_GGUFADAPTER_H

#include <memory>
#include <string>
#include <vector>

#include "compiler/frontends/gguf/GgufFile.h"
#include "models/weights/WeightEdits.h"

namespace kiln::gguf {

struct LoraAdapterFile {
  std::unique_ptr<GgufFile> file; // owns what the deltas view
  std::string architecture;
  float alpha = 0;
  std::vector<LoraDelta> deltas;  // sorted by target name
};

// True when the file says general.type = "adapter".
bool isAdapterFile(const GgufFile &f);

// Opens and checks a LoRA adapter; one-line error naming the problem.
bool readLoraAdapter(const std::string &path, LoraAdapterFile &out, std::string &error);

// A head file's tensors (output_norm.weight, output.weight), decoded to fp32 and written
// over the model's in their formats. Fails when a tensor is missing from the model, of
// another shape, or not one a head has.
bool applyHeadFile(const std::string &path, WeightStore &store, std::string &error);

} // namespace kiln::gguf

#endif // KILN_FRONTENDS_GGUF_GGUFADAPTER_H
