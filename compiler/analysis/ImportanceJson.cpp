#include <cmath>

#include "llvm/Support/JSON.h"

#include "compiler/analysis/ImportanceReport.h"

namespace kiln::analysis {

namespace {

// JSON has no NaN: undefined correlations are null.
llvm::json::Value number(double v) {
  return std::isfinite(v) ? llvm::json::Value(v) : llvm::json::Value(nullptr);
}

} // namespace

void writeImportanceJson(const ImportanceReport &r, const ReportSource &src,
                         llvm::raw_ostream &os) {
  std::vector<double> kld, bi, grad, hk;
  for (const LayerScore &s : r.layers) {
    kld.push_back(s.ablationKld);
    bi.push_back(s.blockInfluence);
    grad.push_back(s.gradientScore);
  }
  for (const HeadScore &s : r.heads)
    hk.push_back(s.ablationKld);
  std::vector<int32_t> rKld = ranksDescending(kld), rBi = ranksDescending(bi),
                       rGrad = ranksDescending(grad), rHead = ranksDescending(hk);

  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("model", src.model);
    j.attributeObject("calibration", [&] {
      j.attribute("text", src.calibration);
      j.attribute("tokens", int64_t(src.tokens));
      j.attribute("ctx", int64_t(r.ctx));
      j.attribute("chunks", int64_t(r.chunks));
      j.attribute("scored", int64_t(r.scored));
    });
    j.attribute("seconds", src.seconds);
    j.attribute("base_ppl", number(r.basePpl));
    j.attributeArray("layers", [&] {
      for (size_t i = 0; i < r.layers.size(); ++i) {
        const LayerScore &s = r.layers[i];
        j.object([&] {
          j.attribute("layer", s.layer);
          j.attribute("ablation_kld", number(s.ablationKld));
          j.attribute("ablation_ppl", number(s.ablationPpl));
          j.attribute("block_influence", number(s.blockInfluence));
          j.attribute("gradient", number(s.gradient));
          j.attribute("gradient_score", number(s.gradientScore));
          j.attributeObject("rank", [&] {
            j.attribute("ablation_kld", rKld[i]);
            j.attribute("block_influence", rBi[i]);
            j.attribute("gradient_score", rGrad[i]);
          });
        });
      }
    });
    j.attributeArray("heads", [&] {
      for (size_t i = 0; i < r.heads.size(); ++i) {
        const HeadScore &s = r.heads[i];
        j.object([&] {
          j.attribute("layer", s.layer);
          j.attribute("head", s.head);
          j.attribute("kv_head", s.kvHead);
          j.attribute("entropy", number(s.entropy));
          j.attribute("ablation_kld", number(s.ablationKld));
          j.attribute("ablation_ppl", number(s.ablationPpl));
          j.attribute("rank", rHead[i]);
        });
      }
    });
    j.attributeObject("rank_correlation", [&] {
      j.attribute("block_influence_vs_ablation", number(r.blockInfluenceVsAblation));
      j.attribute("gradient_vs_ablation", number(r.gradientVsAblation));
      j.attribute("head_entropy_vs_ablation", number(r.headEntropyVsAblation));
    });
  });
  os << "\n";
}

} // namespace kiln::analysis
