#include "passes/memory/ScratchPlan.h"

#include <algorithm>
#include <numeric>

namespace kiln::memory {

namespace {
constexpr uint64_t kAlign = 64;
uint64_t alignUp(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }
} // namespace

ScratchPlan planScratch(const std::vector<BufferRequest> &req) {
  ScratchPlan plan;
  plan.offsets.assign(req.size(), 0);
  // Place the largest buffers first; each goes to the lowest offset that overlaps no
  // already placed buffer whose live range intersects its own.
  std::vector<size_t> order(req.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return req[a].bytes > req[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const uint64_t size = alignUp(req[i].bytes);
    plan.naiveBytes += size;
    std::vector<std::pair<uint64_t, uint64_t>> busy; // [begin, end) of live neighbours
    for (size_t j : placed)
      if (req[j].firstUse <= req[i].lastUse && req[i].firstUse <= req[j].lastUse)
        busy.push_back({plan.offsets[j], plan.offsets[j] + alignUp(req[j].bytes)});
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (const auto &[begin, end] : busy) {
      if (at + size <= begin)
        break;
      at = std::max(at, end);
    }
    plan.offsets[i] = at;
    plan.totalBytes = std::max(plan.totalBytes, at + size);
    placed.push_back(i);
  }
  return plan;
}

} // namespace kiln::memory
