//===- ApplyPrecisionMap.cpp - storage format per weight name -------------===//
#include "passes/precision/Passes.h"

#include <map>
#include <set>

#include "passes/precision/PrecisionSpec.h"
#include "passes/precision/WeightReads.h"

#define DEBUG_TYPE "kiln-apply-precision-map"

namespace kiln {
#define GEN_PASS_DEF_KILNAPPLYPRECISIONMAP
#include "passes/precision/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct ApplyPrecisionMap : public impl::KilnApplyPrecisionMapBase<ApplyPrecisionMap> {
  using KilnApplyPrecisionMapBase::KilnApplyPrecisionMapBase;

  void runOnOperation() override {
    std::map<std::string, uint32_t> formats;
    std::string error;
    if (!precision::parseMap(map, formats, error)) {
      getOperation().emitError() << "kiln-apply-precision-map: " << error;
      return signalPassFailure();
    }
    std::set<std::string> used, read;
    for (const precision::WeightRead &r : precision::weightReads(getOperation())) {
      read.insert(r.weight);
      auto it = formats.find(r.weight);
      if (it == formats.end())
        continue;
      if (r.kind == "rms_norm" && !precision::normFormat(it->second)) {
        r.op->emitError() << "kiln-apply-precision-map: norm scale '" << r.weight
                          << "' can be f32 or f16, not " << precision::formatName(it->second);
        return signalPassFailure();
      }
      precision::setFormat(r.op, it->second);
      used.insert(r.weight);
    }
    for (const auto &entry : formats)
      if (!used.count(entry.first)) {
        // A slimmed weight is read under a derived name (blk.0.attn_q.weight.pruned).
        auto near = read.lower_bound(entry.first + ".");
        std::string hint;
        if (near != read.end() && near->rfind(entry.first + ".", 0) == 0)
          hint = " (it is read as '" + *near + "')";
        getOperation().emitError() << "kiln-apply-precision-map: no op reads weight '"
                                   << entry.first << "'" << hint;
        return signalPassFailure();
      }
  }
};

} // namespace
} // namespace kiln
