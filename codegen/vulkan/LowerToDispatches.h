//===- LowerToDispatches.h - kiln ops to Vulkan dispatches -----------------===//
#ifndef KILN_CODEGEN_VULKAN_LOWERTODISPATCHES_H
#define KILN_CODEGEN_VULKAN_LOWERTODISPATCHES_H

#include <cstdint>
#include <memory>

namespace mlir {
class Pass;
} // namespace mlir

namespace kiln::codegen::vulkan {

struct GpuProgram;

// kiln-lower-to-vulkan-dispatches: @forward (after kiln-plan-memory) as a list of
// dispatches of codegen/vulkan/kernels, written to `program`; the module is unchanged, so
// the CPU lowering runs after it on the same ops. Without a program (kiln-opt) it prints
// the list.
// maxStorageBufferRange is 128 MiB on some phone drivers (docs/vulkan.md): a linear whose
// weights are larger is split by rows into dispatches that read at most this.
constexpr uint64_t kMaxBindingBytes = uint64_t(1) << 27;

std::unique_ptr<mlir::Pass> createLowerToVulkanDispatches(GpuProgram *program = nullptr,
                                                          uint64_t maxBindingBytes =
                                                              kMaxBindingBytes,
                                                          uint64_t rowAlign = 64);
void registerKilnVulkanCodegenPasses();

} // namespace kiln::codegen::vulkan

#endif // KILN_CODEGEN_VULKAN_LOWERTODISPATCHES_H
