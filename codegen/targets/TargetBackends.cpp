//===- TargetBackends.cpp - the registry of back ends ---------------------===//
//
// The one place a --target name becomes a back end: the resolver says what the name
// denotes (TargetResolver.h), and each kind of engine has its factory here. A new back end
// adds its engine's line (docs/adding-a-target.md).
//===----------------------------------------------------------------------===//
#include "codegen/common/TargetBackend.h"

#include "codegen/cpu/CpuBackend.h"
#include "codegen/targets/TargetResolver.h"

namespace kiln::codegen {

std::unique_ptr<TargetBackend> createTargetBackend(const std::string &name, std::string &error) {
  // x86-64 levels, <chip>:cpu (aarch64) and <chip>:hvx (Hexagon) are CPU back ends.
  const CpuTarget *cpu = findCodegenTarget(name, error);
  if (!cpu)
    return nullptr;
  return createCpuBackend(*cpu);
}

} // namespace kiln::codegen
