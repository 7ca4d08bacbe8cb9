#include "codegen/targets/KernelCost.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "codegen/targets/ChipProfile.h"
#include "kiln/quant_packed.h"

namespace kiln::codegen {

namespace {

const KernelCost kCosts[] = {
#include "kernel_costs.inc"
};

} // namespace

std::vector<KernelCost> kernelCostsFor(const std::string &cpu) {
  std::vector<KernelCost> out;
  for (const KernelCost &c : kCosts)
    if (cpu == c.cpu)
      out.push_back(c);
  return out;
}

std::string formatKernelCosts(const ChipProfile &chip, const std::vector<PackedMatrix> &mats) {
  if (!chip.cpu)
    return "";
  const std::string &cpu = chip.cpu->llvmCpu;
  std::vector<KernelCost> costs = kernelCostsFor(cpu);
  std::map<uint32_t, uint64_t> blocks; // per format: 16-row groups x 32-element blocks
  for (const PackedMatrix &m : mats)
    blocks[m.format] += (m.rows + 15) / 16 *
                        ((m.in + KILN_PACK_BLOCK - 1) / KILN_PACK_BLOCK);
  char line[512];
  std::string s = "NEON r16 kernels, llvm-mca (" + cpu +
                  " model), per block of 32 elements x 16 rows x T tokens:\n";
  if (blocks.empty())
    return s + "  the artifact has no r16 matrices\n";
  double cycles = 0;
  for (const auto &[format, n] : blocks) {
    const char *name = kiln_packed_type_name(format);
    for (const KernelCost &c : costs) {
      if (c.format != format)
        continue;
      if (c.noModel[0]) {
        std::snprintf(line, sizeof line, "  %-9s T=%d: LLVM's %s model cannot time it (%s)\n",
                      name, c.tokens, cpu.c_str(), c.noModel);
        s += line;
        cycles = -1;
        continue;
      }
      std::snprintf(line, sizeof line,
                    "  %-9s T=%d: %.0f instructions, %.1f cycles (%.1f multiply-adds/cycle)\n",
                    name, c.tokens, c.instructions, c.cycles, 512.0 * c.tokens / c.cycles);
      s += line;
      if (c.tokens == 1 && cycles >= 0)
        cycles += c.cycles * double(n);
    }
  }
  double ghz = 0;
  for (const CoreCluster &k : chip.cpu->clusters)
    ghz = std::max(ghz, k.maxGhz);
  if (cycles > 0 && ghz > 0) {
    std::snprintf(line, sizeof line,
                  "  decode step: %.0f cycles in these kernels = %.1f tok/s on one %.1f GHz %s "
                  "core if memory were free (compute bound; DRAM bound below)\n",
                  cycles, ghz * 1e9 / cycles, ghz, cpu.c_str());
    s += line;
  } else if (cycles > 0) {
    std::snprintf(line, sizeof line,
                  "  decode step: %.0f cycles in these kernels (no clock in this profile)\n",
                  cycles);
    s += line;
  }
  return s;
}

} // namespace kiln::codegen
