//===- VulkanBackend.h - a CPU target plus a Vulkan GPU program ------------===//
#ifndef KILN_CODEGEN_VULKAN_VULKANBACKEND_H
#define KILN_CODEGEN_VULKAN_VULKANBACKEND_H

#include <memory>

#include "codegen/common/TargetBackend.h"

namespace kiln::codegen {

// `<cpu target>+vulkan` or `<chip>:gpu` (`name`): the CPU back end's code for the whole
// model plus a GPU program of
// the same planned module (codegen/vulkan/GpuProgram.h), so a session can run either
// (kiln/backend.h). Weights are laid out once, in plain rows both read.
std::unique_ptr<TargetBackend> createVulkanBackend(std::unique_ptr<TargetBackend> cpu,
                                                   const std::string &name);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_VULKAN_VULKANBACKEND_H
