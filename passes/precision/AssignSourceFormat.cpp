//===- AssignSourceFormat.cpp - keep each weight's source format ----------===//
#include "passes/precision/Passes.h"

#include "passes/precision/PrecisionSpec.h"
#include "passes/precision/WeightReads.h"

#define DEBUG_TYPE "kiln-assign-source-format"

namespace kiln {
#define GEN_PASS_DEF_KILNASSIGNSOURCEFORMAT
#include "passes/precision/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct AssignSourceFormat : public impl::KilnAssignSourceFormatBase<AssignSourceFormat> {
  using KilnAssignSourceFormatBase::KilnAssignSourceFormatBase;

  // The matrix ops still carry the formats the frontend read (models/llama/LlamaBuilder;
  // it reads norm scales as f32), so every op of a tied weight maps the same source format
  // to the same result.
  void runOnOperation() override {
    for (const precision::WeightRead &r : precision::weightReads(getOperation()))
      precision::setFormat(r.op, precision::sourceFormat(precision::formatOf(r.op),
                                                         r.kind == "rms_norm"));
  }
};

} // namespace
} // namespace kiln
