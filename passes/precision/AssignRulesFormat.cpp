//===- AssignRulesFormat.cpp - storage format per tensor class ------------===//
#include "passes/precision/Passes.h"

#include <map>

#include "passes/precision/PrecisionSpec.h"
#include "passes/precision/WeightReads.h"

#define DEBUG_TYPE "kiln-assign-rules-format"

namespace kiln {
#define GEN_PASS_DEF_KILNASSIGNRULESFORMAT
#include "passes/precision/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct AssignRulesFormat : public impl::KilnAssignRulesFormatBase<AssignRulesFormat> {
  using KilnAssignRulesFormatBase::KilnAssignRulesFormatBase;

  void runOnOperation() override {
    precision::Rules parsed;
    std::string error;
    if (!precision::parseRules(rules, parsed, error)) {
      getOperation().emitError() << "kiln-assign-rules-format: " << error;
      return signalPassFailure();
    }
    // Per weight: the format and the class that decided it (explicit beats default, so a
    // tied table named only as `output` follows that rule).
    struct Choice {
      uint32_t format;
      bool named;
      std::string cls;
    };
    std::map<std::string, Choice> chosen;
    auto reads = precision::weightReads(getOperation());
    for (const precision::WeightRead &r : reads) {
      std::string cls = precision::classOf(r.kind, r.weight);
      bool named = false;
      uint32_t f = parsed.formatOf(cls, &named);
      if (cls == "norms" && !precision::normFormat(f))
        f = 0; // a q-format default does not apply to norm scales
      auto [it, fresh] = chosen.try_emplace(r.weight, Choice{f, named, cls});
      if (fresh || it->second.format == f || !named)
        continue;
      if (it->second.named) {
        r.op->emitError() << "kiln-assign-rules-format: weight '" << r.weight
                          << "' is read as " << it->second.cls << " ("
                          << precision::formatName(it->second.format) << ") and as " << cls
                          << " (" << precision::formatName(f)
                          << "); a tied weight needs one format";
        return signalPassFailure();
      }
      it->second = Choice{f, named, cls};
    }
    for (const precision::WeightRead &r : reads)
      precision::setFormat(r.op, chosen[r.weight].format);
  }
};

} // namespace
} // namespace kiln
