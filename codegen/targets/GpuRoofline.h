//===- GpuRoofline.h - decode and prefill tok/s of kiln's Vulkan code on a GPU -===//
//
// No phone GPU is reachable from here, so kiln's Vulkan speed on one is estimated from the
// chip profile's GPU facts and the shape of the program kiln's Vulkan lowering emits:
//   decode token  = max(bytes / (bandwidth x eff_bw), 2 x MACs / (fp32 peak x eff_fp))
//                   + dispatches x overhead
//   prefill batch = max(N x 2 x MACs / (fp32 peak x eff_fp), weight bytes / (bandwidth x eff_bw))
//                   + dispatches x overhead
// Each factor is an assumption stated in docs/targets.md, "GPU roofline"; the command line
// replaces any of them. fp32 because kiln's kernels compute in fp32 today.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_GPUROOFLINE_H
#define KILN_CODEGEN_TARGETS_GPUROOFLINE_H

#include <cstdint>
#include <string>

#include "codegen/targets/Roofline.h"

namespace kiln::codegen {

struct ChipProfile;

// Dispatches of one forward pass of kiln's Vulkan lowering (LowerToDispatches.cpp): per
// layer rms_norm, q/k/v, rope of q and of k, kv_store, attention, o, add, rms_norm, gate,
// up, silu, mul, down, add; then embed, the final norm and the logits. A prefill batch
// issues the same number (matmul in place of linear). The e2e Vulkan test checks this
// against `kiln-run bench --backend vulkan`.
constexpr uint64_t kVulkanDispatchesPerLayer = 17;
constexpr uint64_t kVulkanDispatchesOutsideLayers = 3;
inline uint64_t vulkanDispatchesPerPass(uint64_t layers) {
  return layers * kVulkanDispatchesPerLayer + kVulkanDispatchesOutsideLayers;
}

struct GpuAssumptions {
  double bandwidthEfficiency = kDefaultDecodeEfficiency; // share of the DRAM peak read
  double computeEfficiency = 0.10; // share of the fp32 peak kiln's kernels reach
  double dispatchMicros = 10;      // per dispatch and its barrier, driver and GPU together
};

struct GpuWorkload {
  DecodeTraffic decode;          // bytes one decoded token reads
  uint64_t decodeMacs = 0;       // multiply-adds of one decoded token
  uint64_t prefillMacs = 0;      // of one prompt token (the classifier runs once a batch)
  uint64_t classifierMacs = 0;   // the logits of the batch's last position
  uint64_t weightBytes = 0;      // read once per prefill batch
  uint64_t promptTokens = 0;     // prefill batch size
  uint64_t dispatchesPerPass = 0;
};

struct GpuEstimate {
  double decodeBandwidthMs = 0, decodeComputeMs = 0, dispatchMs = 0;
  double decodeTokS = 0;
  double prefillComputeMs = 0, prefillBandwidthMs = 0;
  double prefillTokS = 0;
};

// false + one line when the chip has no gpu: section, no DRAM figures or no fp32 peak, or
// an assumption is out of range.
bool estimateGpu(const GpuWorkload &w, const ChipProfile &chip, const GpuAssumptions &a,
                 GpuEstimate &out, std::string &error);

// The estimate as `kiln predict --engine gpu` prints it (several lines).
std::string formatGpuEstimate(const GpuWorkload &w, const ChipProfile &chip,
                              const GpuAssumptions &a, const GpuEstimate &e);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_GPUROOFLINE_H
