//===- LowerToDispatches.h - kiln ops to Vulkan dispatches -----------------===//
#ifndef KILN_CODEGEN_VULKAN_LOWERTODISPATCHES_H
#define KILN_CODEGEN_VULKAN_LOWERTODISPATCHES_H

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
std::unique_ptr<mlir::Pass> createLowerToVulkanDispatches(GpuProgram *program = nullptr);
void registerKilnVulkanCodegenPasses();

} // namespace kiln::codegen::vulkan

#endif // KILN_CODEGEN_VULKAN_LOWERTODISPATCHES_H
