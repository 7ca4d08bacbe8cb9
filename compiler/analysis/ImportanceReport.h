//===- ImportanceReport.h - importance tables as text, JSON and SVG -------===//
//
// What `kiln analyze` prints and writes. The three forms hold the same numbers; the JSON
// keys are documented in docs/slimming.md.
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_ANALYSIS_IMPORTANCEREPORT_H
#define KILN_COMPILER_ANALYSIS_IMPORTANCEREPORT_H

#include <string>

#include "llvm/Support/raw_ostream.h"

#include "compiler/analysis/Importance.h"

namespace kiln::analysis {

// Where the numbers come from, for the headers of the outputs.
struct ReportSource {
  std::string model;       // model path as given
  std::string calibration; // calibration text path as given
  size_t tokens = 0;       // tokens of the whole calibration text
  double seconds = 0;      // time measureImportance took
};

// The layer table, the head table and the rank correlations.
void printImportanceTables(const ImportanceReport &r, llvm::raw_ostream &os);
void writeImportanceJson(const ImportanceReport &r, const ReportSource &src, llvm::raw_ostream &os);
// A self-contained SVG: per-layer score bars (each score normalised to its largest value)
// and heads x layers heat maps of head-ablation KLD and attention entropy.
void writeImportanceSvg(const ImportanceReport &r, const ReportSource &src, llvm::raw_ostream &os);

} // namespace kiln::analysis

#endif // KILN_COMPILER_ANALYSIS_IMPORTANCEREPORT_H
