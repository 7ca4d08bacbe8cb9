//===- ModelEdits.h - changes to a model's weights before the passes ------===//
//
// --adapter / --adapter-scale / --head of compile, eval and ppl: LoRA adapters merged into
// the weights and a head file's tensors written over the model's, each in the format the
// file stores the tensor in (models/weights/WeightEdits.h). compile --base turns the result
// into a module of the base artifact (kiln/module.h); eval and ppl run the reference
// executor on the merged weights.
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_MODELEDITS_H
#define KILN_TOOLS_KILN_MODELEDITS_H

#include <string>
#include <vector>

namespace kiln::tool {

struct ModelEdits {
  std::vector<std::string> adapters; // llama.cpp LoRA GGUF files, merged in order
  float adapterScale = 1.0f;         // llama.cpp's --lora-scaled factor
  std::string head;                  // GGUF with output_norm.weight / output.weight

  bool empty() const { return adapters.empty() && head.empty(); }
};

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_MODELEDITS_H
