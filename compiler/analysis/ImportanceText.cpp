#include <cmath>

#include "llvm/Support/Format.h"

#include "compiler/analysis/ImportanceReport.h"

namespace kiln::analysis {

namespace {

std::string corr(double v) {
  if (std::isnan(v))
    return "n/a";
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%+.3f", v);
  return s;
}

} // namespace

void printImportanceTables(const ImportanceReport &r, llvm::raw_ostream &os) {
  using llvm::format;
  os << format("base PPL %.4f on %zu chunks of %u tokens (%zu scored positions)\n", r.basePpl,
               r.chunks, r.ctx, r.scored);

  std::vector<double> kld, bi, grad;
  for (const LayerScore &s : r.layers) {
    kld.push_back(s.ablationKld);
    bi.push_back(s.blockInfluence);
    grad.push_back(s.gradientScore);
  }
  std::vector<int32_t> rKld = ranksDescending(kld), rBi = ranksDescending(bi),
                       rGrad = ranksDescending(grad);
  os << "\nlayers (ablation: the layer's residual branches removed; rank 1 = most important)\n";
  os << "layer   abl.KLD    abl.PPL      dPPL%  block.infl      dL/dg  rank:KLD  infl  grad\n";
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerScore &s = r.layers[i];
    os << format("%5d  %8.5f  %9.4f  %+8.1f%%  %10.6f  %+9.5f  %8d  %4d  %4d\n", s.layer,
                 s.ablationKld, s.ablationPpl,
                 r.basePpl > 0 ? 100.0 * (s.ablationPpl / r.basePpl - 1.0) : 0.0, s.blockInfluence,
                 s.gradient, rKld[i], rBi[i], rGrad[i]);
  }

  std::vector<double> hk;
  for (const HeadScore &s : r.heads)
    hk.push_back(s.ablationKld);
  std::vector<int32_t> rHead = ranksDescending(hk);
  os << "\nheads (ablation: the head's columns of the output projection zeroed)\n";
  os << "layer  head  kv  entropy   abl.KLD   abl.PPL  rank\n";
  for (size_t i = 0; i < r.heads.size(); ++i) {
    const HeadScore &s = r.heads[i];
    os << format("%5d  %4d  %2d  %7.4f  %8.5f  %8.4f  %4d\n", s.layer, s.head, s.kvHead, s.entropy,
                 s.ablationKld, s.ablationPpl, rHead[i]);
  }

  os << "\nrank correlation (Spearman) with the ablation KLD ranking\n";
  os << "  block influence   vs layer ablation: " << corr(r.blockInfluenceVsAblation) << "\n";
  os << "  gradient |dL/dg|  vs layer ablation: " << corr(r.gradientVsAblation) << "\n";
  os << "  attention entropy vs head ablation:  " << corr(r.headEntropyVsAblation) << "\n";
}

} // namespace kiln::analysis
