/* The compute probe: a loop of multiply-adds on registers only (no loads, no stores),
 * timed with the same threads right after each repetition of a benchmark, as the read probe
 * is. On a shared or virtual machine a core's own speed moves, not only the memory's (on
 * the Zen 3 VM a register-only vpmaddubsw loop took 0.35 and 0.50 TSC cycles per
 * instruction within the same hour), and the read probe cannot see that: a prefill speed
 * or a decode share that moved with this number moved with the machine (docs/perf.md,
 * "The compute probe"). */
#include <stdint.h>

#include "kiln-run.h"

/* 12 independent chains: enough to cover a 4-cycle multiply-add latency on 2 pipes plus
 * headroom, few enough to stay in 16 vector registers. */
#define CHAINS 12
#define ITERS (1u << 19)

#if (defined(__x86_64__) || defined(__aarch64__)) && (defined(__GNUC__) || defined(__clang__))
#define LANES 8
typedef float vf8_t __attribute__((vector_size(32)));
#else /* Hexagon's freestanding build: scalar (HVX floating point is v68+, not emulated) */
#define LANES 1
typedef float vf8_t;
#endif

/* The loop: a = a * m + c on CHAINS named values (an array of them GCC keeps in memory),
 * converging to c / (1 - m) = 0.125, so no value overflows or turns denormal. The
 * multiply-adds per call are CHAINS * LANES * ITERS. */
#define CHAIN_DO(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define CHAIN_INIT(k) vf8_t a##k = (vf8_t){0} + (float)(k);
#define CHAIN_STEP(k) a##k = a##k * m + c;
#define CHAIN_SUM(k) sum += a##k;
#define PROBE_BODY                                                                          \
  const vf8_t m = (vf8_t){0} + 0.999f, c = (vf8_t){0} + 0.000125f;                          \
  CHAIN_DO(CHAIN_INIT)                                                                      \
  for (uint32_t i = 0; i < ITERS; ++i) {                                                    \
    CHAIN_DO(CHAIN_STEP)                                                                    \
  }                                                                                         \
  vf8_t sum = (vf8_t){0};                                                                   \
  CHAIN_DO(CHAIN_SUM)                                                                       \
  return ((float *)&sum)[0];

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The vector width and the fused multiply-add the kernels of an x86-64-v3 artifact use. */
__attribute__((target("avx2,fma"))) static float probe_avx2(void) { PROBE_BODY }
#endif
static float probe_base(void) { PROBE_BODY }

typedef struct {
  float sink;
} probe_thread_t;

static void *probe_thread(void *arg) {
  probe_thread_t *t = arg;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    t->sink = probe_avx2();
    return NULL;
  }
#endif
  t->sink = probe_base();
  return NULL;
}

double run_compute_gflops(uint32_t n_threads) {
  n_threads = run_probe_threads(n_threads);
  probe_thread_t threads[RUN_PROBE_MAX_THREADS];
  double best = 0.0;
  for (int pass = 0; pass < 3; ++pass) {
    const double flops = 2.0 * CHAINS * LANES * (double)ITERS * n_threads;
    const double gflops =
        flops / run_probe_timed(n_threads, probe_thread, threads, sizeof *threads) / 1e9;
    if (gflops > best)
      best = gflops;
  }
  volatile float keep = threads[0].sink; /* the loop must not be optimised away */
  (void)keep;
  return best;
}
