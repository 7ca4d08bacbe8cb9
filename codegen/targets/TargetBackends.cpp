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
  // <cpu target>+vulkan: that CPU back end plus a Vulkan GPU program; <chip>:gpu: the
  // chip's CPU code plus the program (the CPU runs what the GPU cannot).
  auto endsWith = [&](const std::string &s) {
    return name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  if (endsWith("+vulkan") || endsWith(":gpu")) {
    const bool chip = endsWith(":gpu");
    const std::string cpuName = chip ? name.substr(0, name.size() - 4) + ":cpu"
                                     : name.substr(0, name.size() - 7);
    if (chip) { // the chip must list a gpu engine (its profile's gpu: section)
      TargetChoice choice;
      if (!resolveTarget(name, choice, error))
        return nullptr;
    }
#if KILN_HAVE_VULKAN
    const bool gpuInside = cpuName.find("+vulkan") != std::string::npos ||
                           cpuName.find(":gpu") != std::string::npos;
    std::unique_ptr<TargetBackend> cpu = gpuInside ? nullptr : createTargetBackend(cpuName, error);
    if (!cpu && !gpuInside)
      return nullptr;
    // The GPU runs beside an application processor's code, which falls back per op.
    const std::string triple = cpu ? cpu->artifactTarget().triple : "";
    if (triple.rfind("x86_64", 0) != 0 && triple.rfind("aarch64", 0) != 0) {
      error = "target '" + name + "': a GPU program goes with an x86-64 or aarch64 CPU target, not '" +
              cpuName + "'";
      return nullptr;
    }
    const std::string cpuTarget = cpu->name(); // `host` as the level it resolved to
    return createVulkanBackend(std::move(cpu), chip ? name : cpuTarget + "+vulkan");
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
