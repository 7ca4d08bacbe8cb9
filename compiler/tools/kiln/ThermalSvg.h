//===- ThermalSvg.h - kiln thermal-sim's chart ---------------------------------===//
#ifndef KILN_TOOLS_KILN_THERMALSVG_H
#define KILN_TOOLS_KILN_THERMALSVG_H

#include <cstdint>
#include <string>

#include "codegen/targets/ThermalSim.h"

namespace kiln::tool {

struct ThermalChart {
  std::string title;
  const codegen::ThermalRun *flat = nullptr, *governed = nullptr;
  double throttleSkinC = 0, ceilingC = 0; // drawn as lines (ceiling 0: none)
  uint32_t maxThreads = 0;
  double seconds = 0;
};

// Three panels over time, both runs in each: tokens/s; skin (solid) and die (dashed)
// temperature with the OS's skin trip point and the governor's ceiling; the OS's clock cap
// and the threads the governor chose.
std::string thermalSvg(const ThermalChart &c);

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_THERMALSVG_H
