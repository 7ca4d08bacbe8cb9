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
extern "C" const unsigned char kiln_ukernels_hexagon_v67[];
extern "C" const size_t kiln_ukernels_hexagon_v67_size;
extern "C" const unsigned char kiln_ukernels_hexagon_v73[];
extern "C" const size_t kiln_ukernels_hexagon_v73_size;

namespace kiln::codegen {

namespace {

bool has(const std::vector<std::string> &v, const char *x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Targets made from profiles, one per distinct key, alive for the whole program.
CpuTarget &madeTarget(const std::string &key, bool &fresh) {
  static std::map<std::string, std::unique_ptr<CpuTarget>> made;
  std::unique_ptr<CpuTarget> &t = made[key];
  fresh = !t;
  if (!t)
    t = std::make_unique<CpuTarget>();
  return *t;
}
std::mutex madeMutex;

// Prefill panels' cache when the profile gives no L2 (the target's prefillCacheFrom says
// "assumed"): Arm's big cores are usually built with 512 KiB of L2 (Cortex-X4 TRM: 512 KiB
// to 2 MiB; Cortex-A720: 256 or 512 KiB). Qualcomm does not publish the Hexagon DSPs' L2
// size, so no built-in profile gives hexagon.l2_kib and 512 KiB is assumed for both the
// prefill panels and the weight shards.
constexpr unsigned kAssumedArmL2Kib = 512;
constexpr unsigned kAssumedHexagonL2Kib = 512;

} // namespace

std::string governorDefaults(const ChipProfile &p) {
  if (!p.cpu)
    return "";
  int64_t prime = 0, others = 0;
  for (const CoreCluster &c : p.cpu->clusters)
    (c.role == "prime" ? prime : others) += c.count;
  return prime > 0 && others > 0 ? "skip=" + std::to_string(prime) : "";
}

const CpuTarget *chipCpuTarget(const ChipProfile &p, std::string &error) {
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
  std::lock_guard<std::mutex> lock(madeMutex);
  std::string key = p.name + ":cpu:" + p.cpu->llvmCpu;
  for (const std::string &x : f)
    key += "+" + x;
  bool fresh;
  CpuTarget *t = &madeTarget(key, fresh);
  if (fresh) {
    t->name = p.name + ":cpu";
    t->triple = "aarch64-unknown-linux-gnu";
    t->cpu = "generic";
    t->tuneCpu = p.cpu->llvmCpu;
    t->governorDefaults = governorDefaults(p);
    t->rowAlignBytes = unsigned(std::max<int64_t>(64, p.cpu->cacheLineBytes));
    // The L2 of the prime cluster, whose core the code is tuned for; most profiles leave L2
    // out (vendors do not publish it reliably), and then it is assumed.
    t->prefillCacheKib = kAssumedArmL2Kib;
    for (const CoreCluster &c : p.cpu->clusters)
      if (c.role == "prime" && c.l2Kib) {
        t->prefillCacheKib = unsigned(*c.l2Kib);
        t->prefillCacheFrom = "profile";
        break;
      }
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
  return t;
}

const CpuTarget *chipHvxTarget(const ChipProfile &p, std::string &error) {
  if (!p.hexagon) {
    error = "chip '" + p.name + "' has no Hexagon (hvx) engine";
    return nullptr;
  }
  const HexagonEngine &h = *p.hexagon;
  if (h.hvxBytes != 128) {
    error = "kiln's HVX micro-kernels use 128-byte vectors; profile '" + p.name + "' has " +
            std::to_string(h.hvxBytes) + "-byte HVX";
    return nullptr;
  }
  const unsigned char *bitcode = nullptr;
  size_t size = 0;
  if (h.llvmCpu == "hexagonv73") {
    bitcode = kiln_ukernels_hexagon_v73;
    size = kiln_ukernels_hexagon_v73_size;
  } else if (h.llvmCpu == "hexagonv67") {
    bitcode = kiln_ukernels_hexagon_v67;
    size = kiln_ukernels_hexagon_v67_size;
  } else {
    error = "profile '" + p.name + "' names LLVM cpu '" + h.llvmCpu +
            "'; kiln has HVX micro-kernels for hexagonv67 and hexagonv73";
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(madeMutex);
  bool fresh;
  CpuTarget *t = &madeTarget(
      p.name + ":hvx:" + h.llvmCpu + ":l2=" + std::to_string(h.l2Kib ? *h.l2Kib : 0), fresh);
  if (fresh) {
    t->name = p.name + ":hvx";
    // Bare ELF, as the freestanding runtime layer is built: no OS ABI differences apply.
    t->triple = "hexagon-unknown-unknown-elf";
    t->cpu = h.llvmCpu;
    // What the runtime checks: the vector length (the HVX version is fixed at link time).
    t->requiredFeatures = {"hvx-length128b"};
    t->bitcode = bitcode;
    t->bitcodeSize = size;
    // HVX loads whole aligned vectors: rows that start on one need no realignment.
    t->rowAlignBytes = unsigned(h.hvxBytes);
    t->prefillCacheKib = h.l2Kib ? unsigned(*h.l2Kib) : kAssumedHexagonL2Kib;
    t->prefillCacheFrom = h.l2Kib ? "profile" : "assumed";
    t->shardCacheKib = t->prefillCacheKib;
    t->shardCacheFrom = t->prefillCacheFrom;
    t->packRows = unsigned(h.hvxBytes / 4);
  }
  return t;
}

} // namespace kiln::codegen
