//===- Passes.h - registration of every kiln pass -------------------------===//
//
// Each pass area (slimming/, precision/, fusion/, layout/, memory/) declares its passes
// in its own Passes.td, one pass per .cpp; this header registers them all with the
// global pass registry for kiln-opt and the pipelines. See docs/adding-a-pass.md.
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

namespace kiln {

void registerKilnPasses();

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
