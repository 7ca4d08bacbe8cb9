#include "codegen/targets/GpuRoofline.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "codegen/targets/ChipProfile.h"

namespace kiln::codegen {

bool estimateGpu(const GpuWorkload &w, const ChipProfile &chip, const GpuAssumptions &a,
                 GpuEstimate &out, std::string &error) {
  if (!chip.gpu) {
    error = "chip profile '" + chip.name + "' has no gpu: section";
    return false;
  }
  if (!chip.memory) {
    error = "chip profile '" + chip.name + "' has no DRAM figures";
    return false;
  }
  if (!chip.gpu->fp32Gflops) {
    error = "chip profile '" + chip.name + "' gives no gpu.fp32_gflops";
    return false;
  }
  auto inUnit = [](double v) { return v > 0 && v <= 1; };
  if (!inUnit(a.bandwidthEfficiency) || !inUnit(a.computeEfficiency)) {
    error = "the efficiencies must be in (0, 1]";
    return false;
  }
  if (!(a.dispatchMicros >= 0 && a.dispatchMicros <= 1e4)) {
    error = "the dispatch overhead must be in [0, 10000] us";
    return false;
  }
  if (w.decode.bytesPerToken() == 0 || w.promptTokens == 0) {
    error = "no bytes read per token or no prompt tokens: nothing to estimate";
    return false;
  }
  const double bytesPerMs = chip.memory->bandwidthGbs * 1e6 * a.bandwidthEfficiency;
  const double flopsPerMs = *chip.gpu->fp32Gflops * 1e6 * a.computeEfficiency;
  out.dispatchMs = double(w.dispatchesPerPass) * a.dispatchMicros / 1e3;
  out.decodeBandwidthMs = double(w.decode.bytesPerToken()) / bytesPerMs;
  out.decodeComputeMs = 2.0 * double(w.decodeMacs) / flopsPerMs;
  out.decodeTokS = 1e3 / (std::max(out.decodeBandwidthMs, out.decodeComputeMs) + out.dispatchMs);
  out.prefillComputeMs =
      2.0 * (double(w.prefillMacs) * double(w.promptTokens) + double(w.classifierMacs)) /
      flopsPerMs;
  out.prefillBandwidthMs = double(w.weightBytes) / bytesPerMs;
  out.prefillTokS = double(w.promptTokens) * 1e3 /
                    (std::max(out.prefillComputeMs, out.prefillBandwidthMs) + out.dispatchMs);
  return true;
}

std::string formatGpuEstimate(const GpuWorkload &w, const ChipProfile &chip,
                              const GpuAssumptions &a, const GpuEstimate &e) {
  const GpuEngine &g = *chip.gpu;
  auto est = [&](const char *field) { return chip.isEstimated(field) ? " (estimated)" : ""; };
  char buf[2048];
  std::snprintf(
      buf, sizeof buf,
      "GPU estimate for %s (%s, %s):\n"
      "  DRAM            %.1f GB/s peak%s x %.2f = %.1f GB/s read\n"
      "  fp32            %.0f GFLOP/s peak%s x %.2f = %.0f GFLOP/s in kiln's kernels\n"
      "  dispatches      %" PRIu64 " a pass x %.1f us = %.2f ms\n"
      "  decode          %.2f ms reading %" PRIu64 " bytes, %.2f ms computing %" PRIu64
      " MACs, + dispatches: %.1f tok/s\n"
      "  prefill %-5" PRIu64 "   %.2f ms computing, %.2f ms reading the weights, + dispatches:"
      " %.1f tok/s\n",
      chip.name.c_str(), chip.displayName.c_str(), g.name.c_str(), chip.memory->bandwidthGbs,
      est("memory.bandwidth_gbs"), a.bandwidthEfficiency,
      chip.memory->bandwidthGbs * a.bandwidthEfficiency, *g.fp32Gflops, est("gpu.fp32_gflops"),
      a.computeEfficiency, *g.fp32Gflops * a.computeEfficiency, w.dispatchesPerPass,
      a.dispatchMicros, e.dispatchMs, e.decodeBandwidthMs, w.decode.bytesPerToken(),
      e.decodeComputeMs, w.decodeMacs, e.decodeTokS, w.promptTokens, e.prefillComputeMs,
      e.prefillBandwidthMs, e.prefillTokS);
  return buf;
}

} // namespace kiln::codegen
