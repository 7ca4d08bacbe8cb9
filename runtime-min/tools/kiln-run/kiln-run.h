/* kiln-run: the command-line runner for .kiln artifacts, built on the public C API only
 * (kiln/kiln.h). Shared declarations of its subcommands. */
#ifndef KILN_TOOLS_KILN_RUN_H_
#define KILN_TOOLS_KILN_RUN_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

typedef struct run_options_s {
  const char *artifact;
  const char *prompt;      /* generate: -p text */
  const char *text;        /* ppl: text file */
  uint32_t n_predict;      /* generate: -n; bench: -n */
  uint32_t prompt_tokens;  /* bench: -p */
  uint32_t reps;           /* bench: -r */
  uint32_t ctx;            /* ppl: --ctx (0: max_ctx) */
  uint32_t chunks;         /* ppl: --chunks (0: all) */
  uint32_t batch;          /* ppl: --batch, tokens a forward pass (0: max_batch; 1: decode) */
  uint32_t threads;        /* 0: physical cores */
  int pin;                 /* --pin: kiln_session_options_t.pin_threads */
  int prefetch;            /* --prefetch: kiln_artifact_options_t.prefetch */
  uint32_t weights_memory; /* --weights: kiln_weights_memory_t */
  const char *public_key;  /* --public-key: open only artifacts this key signed */
  const char *system;      /* generate --chat, chat: --system text */
  int chat;                /* generate: --chat */
  int no_bos;
  int all_logits;          /* every position's logits: ppl, bench --all-logits */
  kiln_sampler_params_t sampler;
  const char *backend;      /* --backend cpu|vulkan|auto (NULL: cpu) */
  int gpu_profile;          /* bench: a GPU backend reports its profile at the end */
  const char *governor;     /* --governor SPEC (governor_flag.c) */
  const char *governor_log; /* --governor-log FILE */
#define RUN_MAX_MODULES 8
  const char *modules[RUN_MAX_MODULES]; /* --module FILE (module_flag.c) */
  uint32_t n_modules;
} run_options_t;

/* Prints "kiln-run: error: <message>" to stderr; returns 1. */
int run_fail(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Opens the artifact and creates a session with the options' threads and sampler. */
int run_open(const run_options_t *o, kiln_artifact_t **out_artifact,
             kiln_session_t **out_session);
void run_close(kiln_artifact_t *a, kiln_session_t *s);
/* governor_flag.c: attaches the --governor to the session (nothing without one), its keys
 * over the artifact's governor_defaults; the governor goes with run_close. */
int run_governor_attach(const run_options_t *o, const kiln_artifact_t *a, kiln_session_t *s);
void run_governor_close(void);
/* module_flag.c: opens the --module files (with public_key, only ones it signed) and
 * applies them to the session (nothing without one), saying on stderr what each holds and
 * how long applying took. */
int run_modules_apply(const run_options_t *o, const uint8_t *public_key, kiln_session_t *s);

/* Tokenizes text into a malloc'ed array (*out_ids, freed by the caller). */
int run_tokenize(const kiln_artifact_t *a, const char *text, size_t len, int add_bos,
                 int32_t **out_ids, size_t *out_n);

int run_generate(const run_options_t *o);
/* run_chat.c: generate --chat (one user message, the reply only) and chat (interactive). */
int run_generate_chat(const run_options_t *o);
int run_chat(const run_options_t *o);
int run_ppl(const run_options_t *o);
int run_bench(const run_options_t *o);
/* The probes' threads (probe_threads.c): n clamped to 1..RUN_PROBE_MAX_THREADS (1 without
 * threads), and fn(args + t * arg_size) run by n threads at once - the caller's is t = 0 -
 * returning the elapsed seconds. */
#define RUN_PROBE_MAX_THREADS 64
uint32_t run_probe_threads(uint32_t n_threads);
/* Monotonic seconds (probe_threads.c). */
double run_now_s(void);
double run_probe_timed(uint32_t n_threads, void *(*fn)(void *), void *args, size_t arg_size);
/* The streaming-read probe (bandwidth.c): a buffer of `bytes`, every page touched once at
 * open, so each measurement after that is cheap enough to run next to every repetition
 * of a benchmark. NULL when out of memory. */
typedef struct run_probe_s run_probe_t;
run_probe_t *run_probe_open(size_t bytes);
/* The buffer kiln-run bench reads. Its size matters: on the Zen 5 VM the read moved ~2x with
 * it (the lanes are a buffer's eighth apart), and 512 MiB is in a fast band there
 * (docs/perf.md, "The read probe: ..."). linear_packed_bench uses it too, so both report
 * the same read. */
#define RUN_PROBE_BYTES ((size_t)512 << 20)
/* Streaming reads of the probe's buffer with n threads, pass after pass, two read loops
 * (plain and software-prefetching) taking turns: at least RUN_PROBE_MIN_PASSES each, and on
 * until min_seconds have passed (at most RUN_PROBE_MAX_SECONDS or 2 x RUN_PROBE_MAX_PASSES,
 * so a clock that does not move, as on a bare-metal build, still ends it). GB/s of the
 * faster loop over its own passes, and of the best pass of either. */
#define RUN_PROBE_MIN_PASSES 5
#define RUN_PROBE_MAX_PASSES 1000
#define RUN_PROBE_MAX_SECONDS 10.0
typedef struct {
  double sustained_gbs, peak_gbs;
} run_probe_read_t;
run_probe_read_t run_probe_read(run_probe_t *probe, uint32_t n_threads, double min_seconds);
void run_probe_close(run_probe_t *probe);
/* The compute probe (compute_probe.c): best-of-3 rate of a register-only multiply-add loop
 * (AVX2 + FMA where the CPU has them) run by n threads at once, GFLOP/s in all; a few ms. */
double run_compute_gflops(uint32_t n_threads);
/* The machine's CPU time so far (cpu_share.c, Linux /proc; valid 0 elsewhere), in clock
 * ticks: all CPUs' total, busy (user, nice, system, irq, softirq), stolen by the
 * hypervisor, and this process's own. */
typedef struct {
  uint64_t total, busy, steal, self;
  int valid;
} run_cpu_sample_t;
void run_cpu_sample(run_cpu_sample_t *out);
/* Between two samples: the share of all CPU time stolen, and used by other processes, in
 * percent. 0 when either sample is invalid or this process used no tick in between. */
int run_cpu_share(const run_cpu_sample_t *before, const run_cpu_sample_t *after,
                  double *steal_pct, double *others_pct);

/* The mapping holding addr (huge_pages.c, Linux /proc/self/smaps): its size and how much
 * of it is backed by 2 MiB pages (anonymous or file), in KiB. 0 when not known. */
int run_huge_pages(const void *addr, uint64_t *out_huge_kib, uint64_t *out_size_kib);

#endif /* KILN_TOOLS_KILN_RUN_H_ */
