//===- ParallelFor.h - independent items over the cores ---------------------===//
//
// The compiler's weight work (calibrated rounding, its dense kernels, rotations) splits
// independent items over threads: item i's result must not depend on which thread runs
// it, so the output does not depend on the thread count. Header only, no MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_MODELS_WEIGHTS_PARALLELFOR_H
#define KILN_MODELS_WEIGHTS_PARALLELFOR_H

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace kiln {

// The threads to use: the cores, 8 at most.
inline unsigned coreCount() { return std::clamp(std::thread::hardware_concurrency(), 1u, 8u); }

// fn(i) for i in [0, count): thread t takes t, t + threads, ...; the caller's thread is
// t = 0. At most `count` threads.
template <typename Fn> void parallelFor(size_t count, unsigned threads, Fn fn) {
  threads = unsigned(std::clamp<size_t>(threads, 1, std::max<size_t>(count, 1)));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (size_t i = t; i < count; i += threads)
        fn(i);
    });
  for (size_t i = 0; i < count; i += threads)
    fn(i);
  for (std::thread &t : pool)
    t.join();
}

} // namespace kiln

#endif // KILN_MODELS_WEIGHTS_PARALLELFOR_H
