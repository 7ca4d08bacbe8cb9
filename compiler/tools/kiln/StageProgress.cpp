#include "compiler/tools/kiln/StageProgress.h"

#include <cstdio>
#include <unistd.h>

namespace kiln::tool {

StageProgress::StageProgress(bool quiet, int stages)
    : enabled_(!quiet && ::isatty(STDERR_FILENO)), stages_(stages) {}

// Whole lines only, so an error or note printed during a stage never lands mid-line.
void StageProgress::begin(const std::string &what) {
  stop();
  if (!enabled_)
    return;
  std::fprintf(stderr, "kiln: [%d/%d] %s\n", ++current_, stages_, what.c_str());
  names_.push_back(what.substr(0, what.find_first_of(" ,")));
  start_ = std::chrono::steady_clock::now();
  open_ = true;
}

void StageProgress::stop() {
  if (!open_)
    return;
  seconds_.push_back(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  open_ = false;
}

void StageProgress::end() {
  stop();
  if (!enabled_ || seconds_.empty())
    return;
  std::string line = "kiln: stage times:";
  char buf[64];
  for (size_t i = 0; i < seconds_.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s %s %.1f s", i ? "," : "", names_[i].c_str(),
                  seconds_[i]);
    line += buf;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  seconds_.clear();
}

} // namespace kiln::tool
