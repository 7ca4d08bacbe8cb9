//===- Roofline.h - decode tokens/s from bytes per token and DRAM bandwidth -===//
//
// Decode reads every weight once per token plus the KV cache written so far, so
//   upper bound  = bandwidth / bytes per token
//   realistic    = upper bound x efficiency
// The default efficiency and why it is what it is: docs/targets.md, "Roofline".
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_TARGETS_ROOFLINE_H
#define KILN_CODEGEN_TARGETS_ROOFLINE_H

#include <cstdint>
#include <string>

namespace kiln::codegen {

struct ChipProfile;

// 0.8 (a CPU cluster's streaming read against the LPDDR peak, assumed) x 0.7 (kiln's int4
// decode against the same-run streaming read, measured on x86; docs/perf.md, "Default
// decode efficiency 0.56").
constexpr double kDefaultDecodeEfficiency = 0.56;

struct DecodeTraffic {
  uint64_t weightBytesPerToken = 0; // every matrix once, one embedding row, the norms
  uint64_t kvBytesPerPosition = 0;  // K and V of one position, all layers
  uint64_t contextPositions = 0;    // positions attention reads for this token
  uint64_t bytesPerToken() const {
    return weightBytesPerToken + kvBytesPerPosition * contextPositions;
  }
};

struct DecodeEstimate {
  double bytesPerToken = 0;
  double bandwidthGbs = 0;
  double efficiency = 0;
  double upperTokS = 0;     // bandwidth / bytes
  double realisticTokS = 0; // upper x efficiency
};

// false + one-line error when the profile has no DRAM figures (a generic profile) or the
// efficiency is not in (0, 1].
bool estimateDecode(const DecodeTraffic &traffic, const ChipProfile &chip, double efficiency,
                    DecodeEstimate &out, std::string &error);

// The estimate as printed by `kiln inspect --chip` and `kiln predict`: DRAM, bytes per token
// and their parts, upper bound and realistic figure (several lines).
std::string formatEstimate(const DecodeTraffic &traffic, const ChipProfile &chip,
                           const DecodeEstimate &e);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_TARGETS_ROOFLINE_H
