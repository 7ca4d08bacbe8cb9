#include "codegen/targets/ChipTargets.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

// Micro-kernel bitcode embedded at build time (codegen/cpu/CMakeLists.txt).
extern "C" const unsigned char kiln_ukernels_aarch64_dotprod[];
extern "C" const size_t kiln_ukernels_aarch64_dotprod_size;
extern "C" const unsigned char kiln_ukernels_aarch64_i8mm[];
extern "C" const size_t kiln_ukernels_aarch64_i8mm_size;

namespace kiln::codegen {

namespace {

bool has(const std::vector<std::string> &v, const char *x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

const HostTarget *chipCpuTarget(const ChipProfile &p, std::string &error) {
  if (!p.cpu) {
    error = "chip '" + p.name + "' has no cpu engine";
    return nullptr;
  }
  const std::vector<std::string> &f = p.cpu->features;
  if (!has(f, "neon") || !has(f, "dotprod")) {
    error = "kiln's aarch64 micro-kernels need neon and dotprod (Armv8.2-A+dotprod or later); "
            "profile '" + p.name + "' lists only: " +
            [&] {
              std::string s;
              for (const std::string &x : f)
                s += (s.empty() ? "" : ",") + x;
              return s.empty() ? std::string("none") : s;
            }();
    return nullptr;
  }
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<HostTarget>> made;
  std::lock_guard<std::mutex> lock(mu);
  std::string key = p.name + ":" + p.cpu->llvmCpu;
  for (const std::string &x : f)
    key += "+" + x;
  std::unique_ptr<HostTarget> &t = made[key];
  if (!t) {
    t = std::make_unique<HostTarget>();
    t->name = p.name + ":cpu";
    t->triple = "aarch64-unknown-linux-gnu";
    t->cpu = "generic";
    t->tuneCpu = p.cpu->llvmCpu;
    // The runtime's names (HWCAP bits, runtime-min/src/platform/cpu_features.c).
    t->requiredFeatures = {"neon", "dotprod"};
    if (has(f, "i8mm")) {
      t->requiredFeatures.push_back("i8mm");
      t->bitcode = kiln_ukernels_aarch64_i8mm;
      t->bitcodeSize = kiln_ukernels_aarch64_i8mm_size;
    } else {
      t->bitcode = kiln_ukernels_aarch64_dotprod;
      t->bitcodeSize = kiln_ukernels_aarch64_dotprod_size;
    }
  }
  return t.get();
}

} // namespace kiln::codegen
