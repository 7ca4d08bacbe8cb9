#include "passes/Passes.h"

namespace kiln {

// No pass area exists yet: the first one (slimming, precision, fusion...) adds its
// generated register function call here.
void registerKilnPasses() {}

} // namespace kiln
