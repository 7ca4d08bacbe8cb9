// Shared by the micro-kernel differential tests: execution contexts (a serial loop and a
// pool running tasks on real threads) and whether this CPU runs the library under test.
#ifndef KILN_TESTS_UNIT_UKERNELTESTSUPPORT_H
#define KILN_TESTS_UNIT_UKERNELTESTSUPPORT_H

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "kiln/abi.h"
#include "kiln/status.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

// runtime-min/src/platform/platform.h (a C header without extern "C")
extern "C" kiln_status_t kiln_platform_cpu_has(const char *feature, int *out_has);

namespace {

// ---------------------------------------------------------------------------------------
// Execution contexts: a serial loop, and a pool running tasks on real threads.

struct TestPool {
  int threads = 1;
  std::atomic<int> calls{0};
};

void serialFor(void *pool, kiln_task_fn_t fn, void *arg, int32_t n) {
  static_cast<TestPool *>(pool)->calls++;
  for (int32_t t = 0; t < n; ++t)
    fn(arg, t, n);
}

void threadedFor(void *pool, kiln_task_fn_t fn, void *arg, int32_t n) {
  TestPool *p = static_cast<TestPool *>(pool);
  p->calls++;
  std::atomic<int32_t> next{0};
  auto worker = [&] {
    for (int32_t t; (t = next.fetch_add(1)) < n;)
      fn(arg, t, n);
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < p->threads; ++i)
    threads.emplace_back(worker);
  for (std::thread &t : threads)
    t.join();
}

struct Ctx {
  TestPool pool;
  kiln_exec_ctx_t ctx{};
  explicit Ctx(int threads) {
    pool.threads = threads;
    ctx.abi_version = KILN_ABI_VERSION;
    ctx.n_threads = uint32_t(threads);
    ctx.parallel_for = threads == 1 ? serialFor : threadedFor;
    ctx.pool = &pool;
  }
  int calls() const { return pool.calls.load(); }
};

// ---------------------------------------------------------------------------------------
// Helpers

// (used by isaSupported on x86 only)
[[maybe_unused]] bool runtimeFindsCpuFeature(const char *name) {
  int has = 0;
  return kiln_platform_cpu_has(name, &has) == KILN_STATUS_OK && has;
}

bool isaSupported() {
  const std::string isa = KILN_UK_TEST_ISA;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (isa == "x86-64-v3")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
  const bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (isa == "x86-64-v4")
    return v4;
  if (isa == "x86-64-v4-vnni")
    return v4 && __builtin_cpu_supports("avx512vnni");
  if (isa == "x86-64-v4-amx") // the runtime's check also asks Linux for the tile state
    return v4 && __builtin_cpu_supports("avx512vnni") && runtimeFindsCpuFeature("amx-tile") &&
           runtimeFindsCpuFeature("amx-int8") && runtimeFindsCpuFeature("gfni");
  if (isa == "x86-64-v3-avxvnni")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("avxvnni");
#endif
#if defined(__aarch64__) && defined(__linux__)
  // HWCAP_ASIMDDP (bit 20), HWCAP2_I8MM (bit 13): what the kernel reports the CPU runs
  const bool dotprod = (getauxval(AT_HWCAP) >> 20) & 1;
  if (isa == "aarch64-dotprod")
    return dotprod;
  if (isa == "aarch64-i8mm")
    return dotprod && ((getauxval(AT_HWCAP2) >> 13) & 1);
#endif
  return isa.empty();
}

} // namespace

#endif // KILN_TESTS_UNIT_UKERNELTESTSUPPORT_H
