//===- StageProgress.h - what a long compile is doing, on a terminal ------===//
//
// A 1B model spends seconds to minutes in each stage of `kiln compile`; on a terminal each
// stage gets a line when it starts, and a successful run a last line with each stage's
// time. Silent when stderr is not a terminal (CI logs, tests) or with --quiet.
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_STAGEPROGRESS_H
#define KILN_TOOLS_KILN_STAGEPROGRESS_H

#include <chrono>
#include <string>
#include <vector>

namespace kiln::tool {

class StageProgress {
public:
  // `stages`: how many begin() calls a full run makes.
  StageProgress(bool quiet, int stages);
  // Ends the stage before, if any, and prints "kiln: [k/N] what".
  void begin(const std::string &what);
  // After the last stage of a successful run: one line with each stage's seconds.
  void end();

private:
  void stop();

  bool enabled_;
  int stages_, current_ = 0;
  bool open_ = false;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::string> names_; // first word of each stage
  std::vector<double> seconds_;
};

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_STAGEPROGRESS_H
