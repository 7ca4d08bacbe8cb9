//===- GpuProgram.h - a forward pass as Vulkan dispatches ------------------===//
//
// What kiln-lower-to-vulkan-dispatches makes of @forward: the list of dispatches of
// codegen/vulkan/kernels, with constants, bindings, push constants and group counts, each
// push word `a * n + b` in the batch size n. Weight offsets and row strides are not known
// when the pass runs (the CPU lowering lays the weights section out after it), so a push
// word may name a weight; serialize() resolves the names against the final layout and writes
// the artifact's GPU section (runtime-min/include/kiln/gpu_program.h). No MLIR here.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_VULKAN_GPUPROGRAM_H
#define KILN_CODEGEN_VULKAN_GPUPROGRAM_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::codegen::vulkan {

// One push word: a * n + b, plus (when `weight` is set) that weight's byte offset and
// `rows` of its row stride (kind Offset), or its row stride (kind Stride), divided by
// `divide` (4: a float index).
struct PushWord {
  enum class Ref { None, Offset, Stride };
  int32_t a = 0;
  uint32_t b = 0;
  Ref ref = Ref::None;
  std::string weight;
  uint32_t rows = 0;
  uint32_t windowRows = 0; // kind Offset: the rows the dispatch reads from `rows` on (0: to
                           // the weight's end), its weights window
  uint32_t divide = 1;
  uint32_t format = 0; // the format the kernel reads the weight in (checked at serialize)
};

struct Groups {
  uint32_t a = 0, b = 1, div = 1; // ceil((a * n + b) / div)
};

struct Dispatch {
  std::string kernel;              // a kernel of codegen/vulkan/kernels; "": the op is
                                   // compiled for the CPU only (cpuReason says why)
  std::vector<uint32_t> constants; // specialisation constants 0..
  std::vector<uint32_t> bindings;  // kiln_gpu_buffer_t
  std::vector<PushWord> push;
  Groups groups[3];
  std::string what;                // the op it comes from (errors, describe)
  uint32_t when = 0;               // KILN_GPU_WHEN_*: every batch, decode or prefill only
  uint32_t op = 0;                 // its op's place in @forward (the CPU's per-op entry)
  std::string cpuReason;           // kernel "": what the Vulkan lowering lacks for the op
};

struct GpuProgram {
  std::vector<Dispatch> dispatches;
  uint64_t gpuScratchBytes = 0; // attention scores: max_batch * heads * max_ctx floats
};

// A weight's stored offset, row stride and format in the weights section.
struct StoredWeight {
  uint64_t offset = 0, rowStride = 0, size = 0;
  uint32_t format = 0;
};
using WeightLookup = std::function<std::optional<StoredWeight>(const std::string &name)>;

// The GPU section's bytes, the kernels' SPIR-V included; false + error when a weight is
// missing, stored in another format than its kernel reads, or an offset does not fit.
bool serialize(const GpuProgram &program, const WeightLookup &lookup,
               std::vector<uint8_t> &out, std::string &error);

// One line per dispatch, for kiln-opt and kiln inspect.
std::string describe(const GpuProgram &program);

} // namespace kiln::codegen::vulkan

#endif // KILN_CODEGEN_VULKAN_GPUPROGRAM_H
