#include "codegen/targets/HostTargets.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

// Micro-kernel bitcode embedded at build time (generated, see codegen/cpu/CMakeLists.txt).
extern "C" const unsigned char kiln_ukernels_x86_64_v3[];
extern "C" const size_t kiln_ukernels_x86_64_v3_size;
extern "C" const unsigned char kiln_ukernels_x86_64_v3_vnni[];
extern "C" const size_t kiln_ukernels_x86_64_v3_vnni_size;
extern "C" const unsigned char kiln_ukernels_x86_64_v4[];
extern "C" const size_t kiln_ukernels_x86_64_v4_size;
extern "C" const unsigned char kiln_ukernels_x86_64_v4_vnni[];
extern "C" const size_t kiln_ukernels_x86_64_v4_vnni_size;
extern "C" const unsigned char kiln_ukernels_x86_64_v4_amx[];
extern "C" const size_t kiln_ukernels_x86_64_v4_amx_size;

namespace kiln::codegen {

namespace {

// x86-64 psABI micro-architecture levels; the runtime checks the listed features (the
// ones kiln's kernels and LLVM's code for the level actually use).
const std::vector<CpuTarget> &targets() {
  static const std::vector<CpuTarget> t = {
      {"x86-64-v3", "x86_64-unknown-linux-gnu", "x86-64-v3", "",
       {"avx", "avx2", "fma", "f16c", "bmi", "bmi2"},
       kiln_ukernels_x86_64_v3, kiln_ukernels_x86_64_v3_size},
      // v3 + AVX-VNNI (Intel client cores from Alder Lake on, no AVX-512): 256-bit vpdpbusd
      // for the repacked int8/int4 formats
      {"x86-64-v3-vnni", "x86_64-unknown-linux-gnu", "x86-64-v3", "",
       {"avx", "avx2", "fma", "f16c", "bmi", "bmi2", "avxvnni"},
       kiln_ukernels_x86_64_v3_vnni, kiln_ukernels_x86_64_v3_vnni_size},
      {"x86-64-v4", "x86_64-unknown-linux-gnu", "x86-64-v4", "",
       {"avx", "avx2", "fma", "f16c", "bmi", "bmi2", "avx512f", "avx512bw", "avx512dq",
        "avx512vl"},
       kiln_ukernels_x86_64_v4, kiln_ukernels_x86_64_v4_size},
      // v4 + AVX512-VNNI: vpdpbusd for the repacked int8/int4 formats
      {"x86-64-v4-vnni", "x86_64-unknown-linux-gnu", "x86-64-v4", "",
       {"avx", "avx2", "fma", "f16c", "bmi", "bmi2", "avx512f", "avx512bw", "avx512dq",
        "avx512vl", "avx512vnni"},
       kiln_ukernels_x86_64_v4_vnni, kiln_ukernels_x86_64_v4_vnni_size},
      // v4-vnni + AMX int8 tiles (Sapphire Rapids and later): prefill as tile multiplies;
      // GFNI (every AMX CPU has it) splits q4 nibbles for the tiles
      {"x86-64-v4-amx", "x86_64-unknown-linux-gnu", "x86-64-v4", "",
       {"avx", "avx2", "fma", "f16c", "bmi", "bmi2", "avx512f", "avx512bw", "avx512dq",
        "avx512vl", "avx512vnni", "amx-tile", "amx-int8", "gfni"},
       kiln_ukernels_x86_64_v4_amx, kiln_ukernels_x86_64_v4_amx_size},
  };
  return t;
}

} // namespace

std::vector<std::string> hostTargetNames() {
  std::vector<std::string> names = {"host"};
  for (const CpuTarget &t : targets())
    names.push_back(t.name);
  return names;
}

const CpuTarget *findHostTarget(const std::string &name, std::string &error) {
  std::string wanted = name;
  if (name == "host") {
    llvm::StringMap<bool> f = llvm::sys::getHostCPUFeatures();
    bool v4 = f.lookup("avx512f") && f.lookup("avx512bw") && f.lookup("avx512dq") &&
              f.lookup("avx512vl");
    bool v3 = f.lookup("avx2") && f.lookup("fma") && f.lookup("f16c") && f.lookup("bmi2");
    if (!v3) {
      error = "this machine's CPU lacks AVX2/FMA/F16C: kiln's x86 targets need x86-64-v3";
      return nullptr;
    }
    bool vnni = v4 && f.lookup("avx512vnni");
    bool amx = f.lookup("amx-tile") && f.lookup("amx-int8") && f.lookup("gfni");
    wanted = vnni ? (amx ? "x86-64-v4-amx" : "x86-64-v4-vnni")
             : v4 ? "x86-64-v4"
             : f.lookup("avxvnni") ? "x86-64-v3-vnni"
                                   : "x86-64-v3";
  }
  for (const CpuTarget &t : targets())
    if (t.name == wanted)
      return &t;
  std::string known;
  for (const std::string &n : hostTargetNames())
    known += (known.empty() ? "" : ", ") + n;
  error = "unknown target '" + name + "' (known: " + known + ")";
  return nullptr;
}

} // namespace kiln::codegen
