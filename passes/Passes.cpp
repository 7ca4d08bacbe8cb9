#include "passes/Passes.h"

#include "passes/precision/Passes.h"

namespace kiln {

// One call per pass area (each area's Passes.td generates its register function).
void registerKilnPasses() { registerKilnPrecisionPasses(); }

} // namespace kiln
