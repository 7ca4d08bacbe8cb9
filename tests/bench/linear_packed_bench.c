/* Decode matrix-vector speed of kiln_uk_linear_packed against the read bandwidth of the
 * same machine, measured in the same run: the kernel alone, without the rest of a decode
 * step, so a kernel change is judged by the fraction of bandwidth it reaches.
 *
 * A "token" multiplies one activation vector with M matrices of ROWS x IN weights (M chosen
 * so they fill ~1 GiB, far past the last-level cache, as a decode step streams a model).
 * With T threads each thread takes one fixed share of every matrix's 16-row groups; `sync`
 * mode also waits on a barrier after every matrix, as the runtime's parallel_for does, so
 * the two modes differ by the cost of the hand-offs. (The runtime's kernels cut a linear
 * into 8 tasks per thread, a contiguous share each, the idle taking the others' last tasks;
 * this bench keeps one fixed share,
 * the kernel's own speed.) Median of 7 tokens.
 *
 * Two reads: its own (one plain stream per thread over the weights' buffer), and kiln-run
 * bench's (runtime-min/tools/kiln-run/bandwidth.c, RUN_PROBE_BYTES: 4 lanes per thread,
 * a plain and a prefetching loop raced), once before and once after a second timing of
 * the kernel, each for as long as the kernel took. The kernel's better time against the
 * faster of those two reads is the figure to set beside kiln-run bench's "of bandwidth"
 * (on the Sapphire Rapids VM, where decode prefetches, the q4_0 kernel read 137% of the
 * one-stream read). The weights lie in 2 MiB pages where Linux gives them (MADV_HUGEPAGE),
 * as `kiln-run --weights huge` puts an artifact's (with 4 KiB pages the kernel reads
 * less).
 *
 * Not built by CMake; link it with a native kernel library of the build:
 *   gcc -O2 -march=native -Icodegen/common -Icodegen/cpu/ukernels -Iruntime-min/include \
 *       -Iruntime-min/tools/kiln-run tests/bench/linear_packed_bench.c \
 *       runtime-min/tools/kiln-run/bandwidth.c runtime-min/tools/kiln-run/probe_threads.c \
 *       build/lib/libkiln_ukernels_x86_v4_vnni.a -lpthread -lm -o /tmp/lpb
 *   /tmp/lpb q4_0_r16 5632 2048 2 [MiB] [TOKENS]  # format rows in threads
 *       (formats: q4_0_r16, q4_1_r16, q8_0_r16, q4_K_r16, q5_K_r16, q6_K_r16)
 *       [weight MiB per token, 1024] [tokens per call, 1; more: a prefill]
 *       [PANEL: tokens per kernel call, all; fewer: kiln-size-prefill-panels' split]
 * (a few MiB instead of 1024 keeps the matrices in cache: the kernel's compute ceiling).
 * The numbers in docs/perf.md used the kernel compiled as an artifact's is:
 *   clang-19 -std=c11 -O2 -ffreestanding -fno-math-errno -march=x86-64-v4 -mavx512vnni \
 *       -Icodegen/common -Icodegen/cpu/ukernels -Iruntime-min/include \
 *       -c codegen/cpu/ukernels/x86/linear_packed.c -o /tmp/lpk.o
 * and linked with /tmp/lpk.o in place of the library (x86-64-v4-amx's prefill: add
 * -mamx-tile -mamx-int8 -mgfni; main asks Linux for the tile state).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <immintrin.h>

#include "kiln-run.h"
#include "kiln/quant_packed.h"
#include "ukernel_abi.h"

/* With one thread, the thread's CPU time: on a machine shared with builds, time spent
 * descheduled would otherwise count against the kernel and the probe unequally. */
static int g_cpu_clock;
static double now(void) {
  struct timespec t;
  clock_gettime(g_cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  uint32_t format;
  int rows, in, mats, threads, sync, tokens, panel;
  int64_t stride, groups, mat_bytes;
  uint8_t *w;
  float *x;
  atomic_int arrived;
  atomic_int generation;
} bench_t;

typedef struct {
  bench_t *b;
  int id;
  float *y;
  uint8_t *qx;
  __m256i sink;
} worker_t;

static void barrier(bench_t *b) {
  const int gen = atomic_load(&b->generation);
  if (atomic_fetch_add(&b->arrived, 1) == b->threads - 1) {
    atomic_store(&b->arrived, 0);
    atomic_fetch_add(&b->generation, 1);
  } else {
    while (atomic_load(&b->generation) == gen)
      _mm_pause();
  }
}

/* One token: this thread's groups of every matrix. */
static void token(worker_t *wk) {
  bench_t *b = wk->b;
  const int64_t g0 = b->groups * wk->id / b->threads, g1 = b->groups * (wk->id + 1) / b->threads;
  for (int m = 0; m < b->mats; ++m) {
    const uint8_t *w = b->w + m * b->mat_bytes + g0 * b->stride;
    const int32_t rows = (int32_t)((g1 - g0) * (int64_t)kiln_packed_rows(b->format));
    for (int t0 = 0; t0 < b->tokens; t0 += b->panel) /* as the lowering splits a prefill */
      kiln_uk_linear_packed(NULL, b->format, b->x + (int64_t)t0 * b->in,
                            b->tokens - t0 < b->panel ? b->tokens - t0 : b->panel, b->in, w,
                            b->stride, rows, wk->y + (int64_t)t0 * rows, wk->qx, 0);
    if (b->sync)
      barrier(b);
  }
}

/* Streams this thread's share of the whole buffer with wide loads (the read probe). */
static void probe(worker_t *wk) {
  bench_t *b = wk->b;
  const int64_t total = b->mat_bytes * b->mats / 128 * 128;
  const int64_t lo = total * wk->id / b->threads / 128 * 128;
  const int64_t hi = total * (wk->id + 1) / b->threads / 128 * 128;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = lo; i < hi; i += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_load_si256((const __m256i *)(b->w + i)));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256((const __m256i *)(b->w + i + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256((const __m256i *)(b->w + i + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256((const __m256i *)(b->w + i + 96)));
  }
  wk->sink = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
}

static int g_what; /* 0 probe, 1 kernel */
static void *run(void *arg) {
  worker_t *wk = arg;
  barrier(wk->b);
  if (g_what)
    token(wk);
  else
    probe(wk);
  barrier(wk->b);
  return NULL;
}

/* Median seconds of 7 runs of `what` on all threads. */
static double timed(bench_t *b, worker_t *wk, int what) {
  double t[7];
  g_what = what;
  for (int r = 0; r < 7; ++r) {
    pthread_t tid[64];
    for (int i = 1; i < b->threads; ++i)
      pthread_create(&tid[i], NULL, run, &wk[i]);
    barrier(b);
    const double t0 = now();
    if (what)
      token(&wk[0]);
    else
      probe(&wk[0]);
    barrier(b);
    t[r] = now() - t0;
    for (int i = 1; i < b->threads; ++i)
      pthread_join(tid[i], NULL);
  }
  qsort(t, 7, sizeof t[0], cmp);
  return t[3];
}

int main(int argc, char **argv) {
  bench_t b = {0};
#if defined(__linux__)
  /* a kernel built with AMX needs the tile data state, which Linux grants on request
   * (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); harmless where there is none */
  syscall(SYS_arch_prctl, 0x1023, 18);
#endif
  const char *fname = argc > 1 ? argv[1] : "q4_0_r16";
  b.format = !strcmp(fname, "q8_0_r16")   ? KILN_TYPE_Q8_0_R16
             : !strcmp(fname, "q4_1_r16") ? KILN_TYPE_Q4_1_R16
             : !strcmp(fname, "q4_K_r16") ? KILN_TYPE_Q4_K_R16
             : !strcmp(fname, "q5_K_r16") ? KILN_TYPE_Q5_K_R16
             : !strcmp(fname, "q6_K_r16") ? KILN_TYPE_Q6_K_R16
                                          : KILN_TYPE_Q4_0_R16;
  b.rows = argc > 2 ? atoi(argv[2]) : 5632;
  b.in = argc > 3 ? atoi(argv[3]) : 2048;
  b.threads = argc > 4 ? atoi(argv[4]) : 1;
  b.tokens = argc > 6 ? atoi(argv[6]) : 1; /* > 1: a prefill of that many tokens */
  const int64_t want = (argc > 5 ? atoll(argv[5]) : 1024) << 20; /* MiB streamed per token */
  b.panel = argc > 7 ? atoi(argv[7]) : b.tokens; /* tokens per kernel call */
  if (want <= 0 || b.tokens < 1 || b.tokens > 512 || b.rows < 16 || b.in < 32 || b.in % 32 ||
      (kiln_is_packed_kquant(b.format) && b.in % 256) || b.threads < 1 || b.threads > 64 ||
      b.panel < 1) {
    fprintf(stderr,
            "usage: %s q4_0_r16|q4_1_r16|q8_0_r16|q4_K_r16|q5_K_r16|q6_K_r16 ROWS IN(multiple "
            "of 32; 256 for K) THREADS [MiB] [TOKENS] [PANEL]\n",
            argv[0]);
    return 2;
  }
  const int64_t group_rows = (int64_t)kiln_packed_rows(b.format);
  b.groups = (b.rows + group_rows - 1) / group_rows;
  b.stride = (int64_t)kiln_packed_group_bytes(b.format, (uint64_t)b.in);
  b.mat_bytes = b.stride * b.groups;
  b.mats = (int)(want / b.mat_bytes) + 1;
  const int64_t total = b.mat_bytes * b.mats;
  const size_t huge = (size_t)2 << 20, w_bytes = ((size_t)total + huge - 1) / huge * huge;
  b.w = aligned_alloc(huge, w_bytes);
#if defined(__linux__)
  if (b.w)
    (void)madvise(b.w, w_bytes, MADV_HUGEPAGE);
#endif
  b.x = aligned_alloc(64, sizeof(float) * b.in * b.tokens);
  if (!b.w || !b.x)
    return 1;
  /* Every byte in 0x20..0x3f: any two of them are a normal fp16 (no denormal or NaN in the
   * float path, wherever the layout puts the scales), and as codes they are as good as any. */
  for (int64_t i = 0; i < total; ++i)
    b.w[i] = (uint8_t)(0x20 | ((i * 2654435761u >> 13) & 0x1f));
  for (int i = 0; i < b.in * b.tokens; ++i)
    b.x[i] = (float)((i * 37 % 101) - 50) / 50.0f;
  g_cpu_clock = b.threads == 1;
  worker_t wk[64];
  for (int i = 0; i < b.threads; ++i) {
    wk[i] = (worker_t){.b = &b, .id = i};
    wk[i].y = aligned_alloc(64, sizeof(float) * (b.groups + 1) * group_rows * b.tokens);
    wk[i].qx = aligned_alloc(64, kiln_packed_act_stride((uint64_t)b.in) * b.tokens);
  }
  const double gb = (double)total / 1e9;
  const double tp = timed(&b, wk, 0);
  b.sync = 0;
  const double tk = timed(&b, wk, 1);
  b.sync = 1;
  const double ts = timed(&b, wk, 1);
  const double tp2 = timed(&b, wk, 0);
  const double probe_gbs = gb / (tp < tp2 ? tp : tp2);
  /* kiln-run bench's read, on its buffer size, for as long as the kernel took, before and
   * after it */
  run_probe_t *rp = run_probe_open(RUN_PROBE_BYTES);
  if (!rp)
    return 1;
  const run_probe_read_t r0 = run_probe_read(rp, (uint32_t)b.threads, tk * 7);
  const double tk2 = timed(&b, wk, 1);
  const run_probe_read_t r1 = run_probe_read(rp, (uint32_t)b.threads, tk * 7);
  run_probe_close(rp);
  const double kr_gbs = r0.sustained_gbs > r1.sustained_gbs ? r0.sustained_gbs : r1.sustained_gbs;
  const double tkb = tk < tk2 ? tk : tk2;
  printf("%s %d x %d x %d matrices (%.2f GB), %d thread(s), %d token(s) in panels of %d: "
         "%.1f tok/s\n", fname, b.rows, b.in, b.mats, gb, b.threads, b.tokens, b.panel,
         b.tokens / tk);
  printf("  read probe        %7.2f GB/s\n", probe_gbs);
  printf("  kernel, no sync   %7.2f GB/s  %5.1f %%\n", gb / tk, 100.0 * gb / tk / probe_gbs);
  printf("  kernel, barrier   %7.2f GB/s  %5.1f %%  (one per matrix)\n", gb / ts,
         100.0 * gb / ts / probe_gbs);
  printf("  kiln-run read     %7.2f GB/s  (4 lanes, plain or prefetching: the faster, of 2 runs)\n",
         kr_gbs);
  printf("  kernel, no sync   %7.2f GB/s  %5.1f %%  of kiln-run's read (the better of 2 runs)\n",
         gb / tkb, 100.0 * gb / tkb / kr_gbs);
  return 0;
}
