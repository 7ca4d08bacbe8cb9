#include "codegen/targets/TargetResolver.h"

#include <algorithm>

#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/ChipTargets.h"

namespace kiln::codegen {

namespace {

std::string join(const std::vector<std::string> &v, const std::string &sep) {
  std::string s;
  for (const std::string &x : v)
    s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string knownNames() {
  std::vector<std::string> names = hostTargetNames();
  for (const BuiltinProfile &b : builtinProfiles())
    for (const std::string &e : b.profile.engines())
      names.push_back(b.profile.name + ":" + e);
  return join(names, ", ");
}

} // namespace

bool resolveTarget(const std::string &name, TargetChoice &out, std::string &error) {
  out = TargetChoice();
  size_t colon = name.find(':');
  if (colon == std::string::npos) {
    if (const BuiltinProfile *b = findBuiltinProfile(name)) {
      error = "target '" + name + "' is a chip: name an engine, " + name + ":" +
              join(b->profile.engines(), " or " + name + ":");
      return false;
    }
    out.host = findHostTarget(name, error);
    if (!out.host && error.rfind("unknown target", 0) == 0)
      error = "unknown target '" + name + "' (known: " + knownNames() + ")";
    return out.host != nullptr;
  }
  const std::string chip = name.substr(0, colon), engine = name.substr(colon + 1);
  const BuiltinProfile *b = findBuiltinProfile(chip);
  if (!b) {
    error = "unknown chip '" + chip + "' in target '" + name + "' (known: " + knownNames() + ")";
    return false;
  }
  std::vector<std::string> engines = b->profile.engines();
  if (std::find(engines.begin(), engines.end(), engine) == engines.end()) {
    error = "chip '" + chip + "' has no engine '" + engine + "' (it has: " +
            join(engines, ", ") + ")";
    return false;
  }
  out.chip = &b->profile;
  out.engine = engine;
  return true;
}

const CpuTarget *findCodegenTarget(const std::string &name, std::string &error) {
  TargetChoice choice;
  if (!resolveTarget(name, choice, error))
    return nullptr;
  if (choice.host)
    return choice.host;
  if (choice.engine == "cpu")
    return chipCpuTarget(*choice.chip, error);
  if (choice.engine == "gpu") { // createTargetBackend makes it the chip's CPU + Vulkan
    error = "target '" + name + "' is a GPU, not a CPU target";
    return nullptr;
  }
  return chipHvxTarget(*choice.chip, error);
}

} // namespace kiln::codegen
