//===- AssignSourceFormat.cpp - keep each weight's source format ----------===//
#include "passes/precision/Passes.h"

#include <map>

#include "kiln/quant.h"
#include "passes/precision/PrecisionSpec.h"
#include "passes/precision/WeightReads.h"
#include "passes/slimming/SlimmingUtils.h"

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
  // to the same result. Effects, per weight (a tied table once): kept in the op's format
  // (whether the stored bytes are the file's is the weight layout's `conversion`, which
  // also sees derived weights), converted exactly (bf16 -> f32) or requantised; one remark
  // says which formats were requantised into which, so a file's IQ4 or K-quant tensors
  // never change format unannounced.
  void runOnOperation() override {
    enum Outcome { kKept, kConverted, kRequantised };
    std::map<std::string, Outcome> outcome;
    std::map<std::string, std::pair<uint32_t, uint32_t>> requantised; // weight -> (from, to)
    for (const precision::WeightRead &r : precision::weightReads(getOperation())) {
      const uint32_t from = precision::formatOf(r.op);
      const uint32_t to = precision::sourceFormat(from, r.kind == "rms_norm", keepKQuants,
                                                      keepPackedKQuants);
      outcome[r.weight] = to == from                     ? kKept
                          : from == KILN_GGML_TYPE_BF16 ? kConverted
                                                        : kRequantised;
      if (outcome[r.weight] == kRequantised)
        requantised[r.weight] = {from, to};
      precision::setFormat(r.op, to);
    }
    if (!requantised.empty()) {
      std::map<std::pair<uint32_t, uint32_t>, size_t> counts;
      bool kquant = false;
      for (const auto &[weight, ft] : requantised) {
        ++counts[ft];
        kquant = kquant || ft.first == KILN_GGML_TYPE_Q4_K || ft.first == KILN_GGML_TYPE_Q5_K ||
                 ft.first == KILN_GGML_TYPE_Q6_K;
      }
      std::string list;
      for (const auto &[ft, count] : counts)
        list += (list.empty() ? "" : ", ") + std::to_string(count) + " " +
                precision::formatName(ft.first) + " -> " + precision::formatName(ft.second);
      getOperation().emitRemark()
          << "kiln-assign-source-format: requantised " << list
          << (kquant ? " (K-quants the target has no integer-dot kernels for: into formats "
                       "that have them; --precision lossless keeps them as the file stores "
                       "them)"
                     : "");
    }
    size_t n[3] = {0, 0, 0};
    for (const auto &entry : outcome)
      ++n[entry.second];
    slimming::recordPassEffects(getOperation(), "kiln-assign-source-format",
                                "kept=" + std::to_string(n[kKept]) + ",converted=" +
                                    std::to_string(n[kConverted]) + ",requantised=" +
                                    std::to_string(n[kRequantised]));
  }
};

} // namespace
} // namespace kiln
