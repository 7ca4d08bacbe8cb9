#include "codegen/targets/Roofline.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "codegen/targets/ChipProfile.h"

namespace kiln::codegen {

bool estimateDecode(const DecodeTraffic &traffic, const ChipProfile &chip, double efficiency,
                    DecodeEstimate &out, std::string &error) {
  if (!chip.memory) {
    error = "chip profile '" + chip.name + "' has no DRAM figures (a generic profile); " +
            "name a SoC for a decode estimate";
    return false;
  }
  if (!(efficiency > 0 && efficiency <= 1)) {
    error = "the efficiency must be in (0, 1], got " + std::to_string(efficiency);
    return false;
  }
  if (traffic.bytesPerToken() == 0) {
    error = "no bytes read per token: nothing to estimate";
    return false;
  }
  out.bytesPerToken = double(traffic.bytesPerToken());
  out.bandwidthGbs = chip.memory->bandwidthGbs;
  out.efficiency = efficiency;
  out.upperTokS = out.bandwidthGbs * 1e9 / out.bytesPerToken;
  out.realisticTokS = out.upperTokS * efficiency;
  return true;
}

std::string formatEstimate(const DecodeTraffic &t, const ChipProfile &chip,
                           const DecodeEstimate &e) {
  const DramSystem &m = *chip.memory;
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "decode estimate for %s (%s):\n"
      "  DRAM            %s %" PRId64 " MT/s x %" PRId64 " bit = %.1f GB/s peak%s\n"
      "  bytes/token     %" PRIu64 " = weights %" PRIu64 " + KV %" PRIu64 " x %" PRIu64
      " positions\n"
      "  upper bound     %.1f tok/s (peak bandwidth / bytes per token)\n"
      "  realistic       %.1f tok/s (x efficiency %.2f)\n",
      chip.name.c_str(), chip.displayName.c_str(), m.type.c_str(), m.mts, m.busBits,
      m.bandwidthGbs,
      chip.isEstimated("memory.bandwidth_gbs") || chip.isEstimated("memory.mts")
          ? " (estimated)"
          : "",
      t.bytesPerToken(), t.weightBytesPerToken, t.kvBytesPerPosition, t.contextPositions,
      e.upperTokS, e.realisticTokS, e.efficiency);
  return buf;
}

} // namespace kiln::codegen
