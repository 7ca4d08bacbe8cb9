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
  uint32_t threads;        /* 0: physical cores */
  int no_bos;
  kiln_sampler_params_t sampler;
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

/* Tokenizes text into a malloc'ed array (*out_ids, freed by the caller). */
int run_tokenize(const kiln_artifact_t *a, const char *text, size_t len, int add_bos,
                 int32_t **out_ids, size_t *out_n);

int run_generate(const run_options_t *o);
int run_ppl(const run_options_t *o);
int run_bench(const run_options_t *o);
/* Best-of-5 streaming read bandwidth over `bytes` with n threads, GB/s (bandwidth.c). */
double run_read_bandwidth_gbs(uint32_t n_threads, size_t bytes);

#endif /* KILN_TOOLS_KILN_RUN_H_ */
