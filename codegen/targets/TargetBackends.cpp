//===- TargetBackends.cpp - the registry of back ends ---------------------===//
//
// The one place a --target name becomes a back end: the resolver says what the name
// denotes (TargetResolver.h), and each kind of engine has its factory here. A new back end
// adds its engine's line (docs/adding-a-target.md).
//===----------------------------------------------------------------------===//
#include "codegen/common/TargetBackend.h"

#include "codegen/cpu/CpuBackend.h"
#include "codegen/targets/TargetResolver.h"
#if KILN_HAVE_VULKAN
#include "codegen/vulkan/VulkanBackend.h"
#endif

namespace kiln::codegen {

std::unique_ptr<TargetBackend> createTargetBackend(const std::string &name, std::string &error) {
  // <cpu target>+vulkan: that CPU back end plus a Vulkan GPU program.
  const std::string gpu = "+vulkan";
  if (name.size() > gpu.size() && name.compare(name.size() - gpu.size(), gpu.size(), gpu) == 0) {
#if KILN_HAVE_VULKAN
    std::unique_ptr<TargetBackend> cpu =
        createTargetBackend(name.substr(0, name.size() - gpu.size()), error);
    return cpu ? createVulkanBackend(std::move(cpu)) : nullptr;
#else
    error = "target '" + name + "': this kiln was built without Vulkan (KILN_VULKAN=OFF)";
    return nullptr;
#endif
  }
  // x86-64 levels, <chip>:cpu (aarch64) and <chip>:hvx (Hexagon) are CPU back ends.
  const CpuTarget *cpu = findCodegenTarget(name, error);
  if (!cpu)
    return nullptr;
  return createCpuBackend(*cpu);
}

} // namespace kiln::codegen
