#include "passes/Passes.h"

#include "passes/fusion/Passes.h"
#include "passes/fusion/LinearFusionPasses.h"
#include "passes/layout/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/slimming/Passes.h"

namespace kiln {

// One call per pass area (each area's Passes.td generates its register function).
void registerKilnPasses() {
  registerKilnSlimmingPasses();
  registerKilnPrecisionPasses();
  registerKilnFusionPasses();
  registerKilnLinearFusionPasses();
  registerKilnLayoutPasses();
  registerKilnMemoryPasses();
}

} // namespace kiln
