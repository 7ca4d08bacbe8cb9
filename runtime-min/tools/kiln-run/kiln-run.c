/* kiln-run: runs a compiled .kiln artifact.
 *
 *   kiln-run generate A.kiln -p PROMPT [-n N] [--temp T --top-k K --top-p P --seed S]
 *                     [--threads N] [--no-bos] [--chat [--system TEXT]] [--weights map|huge]
 *   kiln-run chat A.kiln [--system TEXT] [-n N] [--temp T ...] [--threads N]
 *   kiln-run ppl A.kiln TEXT [--ctx C] [--chunks N] [--batch B] [--threads N] [--weights map|huge]
 *   kiln-run bench A.kiln [-p 64] [-n 128] [-r 5] [--threads N] [--weights map|huge]
 *                  [--all-logits]
 * generate, chat, bench: --governor SPEC [--governor-log FILE] (governor_flag.c).
 *
 * --weights: map the artifact (the default) or read it into 2 MiB pages
 * (KILN_WEIGHTS_HUGE_PAGES in kiln/kiln.h). --all-logits: bench computes every prompt
 * position's logits, as ppl does (kiln_session_options_t.all_logits), not the last only.
 *
 * generate streams the prompt (verbatim) and then each generated piece to stdout, and the
 * timings to stderr; with --chat the prompt is a user message in the artifact's chat
 * template and only the reply is printed. chat reads one message per line from stdin and
 * keeps the conversation (and its KV cache) across turns (run_chat.c). ppl is llama.cpp's
 * perplexity method (see run_ppl.c); bench measures prefill and decode speed (run_bench.c).
 * A bad flag is one error line and exit status 1.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln-run.h"
#include "kiln/backend.h"
#if defined(KILN_RUN_VULKAN)
#include "kiln/vulkan.h"
#endif

static const char kUsage[] =
    "usage: kiln-run generate A.kiln -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]\n"
    "                         [--seed S] [--threads N] [--no-bos] [--weights map|huge]\n"
    "                         [--chat [--system TEXT]]\n"
    "       kiln-run chat A.kiln [--system TEXT] [-n N] [--temp T] [--top-k K] [--top-p P]\n"
    "                     [--seed S] [--threads N] [--weights map|huge]\n"
    "       kiln-run ppl A.kiln TEXT [--ctx C] [--chunks N] [--batch B] [--threads N]\n"
    "                    [--weights map|huge]   (--batch 1: every token as a decode step)\n"
    "       kiln-run bench A.kiln [-p PROMPT_TOKENS] [-n GEN_TOKENS] [-r REPS] [--threads N]\n"
    "                      [--weights map|huge] [--all-logits]\n"
    "every command: [--public-key KEY.pub] opens only an artifact signed with its secret key\n"
    "every command: [--module M.kiln]... applies modules (adapter, head, filter) of the\n"
    "artifact to the session (kiln compile --base writes them)\n"
    "every command: [--backend cpu|vulkan|auto] runs the forward passes on the CPU code (the\n"
    "default) or the artifact's GPU program (a +vulkan target); auto tries vulkan, then cpu\n"
    "every command: [--pin] pins the threads to the fastest cores, one each; [--prefetch]\n"
    "asks the OS to read the whole mapped artifact ahead at open\n"
    "--weights map: the artifact is mapped from its file (the default); huge: read into\n"
    "memory in 2 MiB pages where the OS has them (faster decode, slower open)\n"
    "--all-logits: bench's prefill computes every position's logits (ppl always does)\n"
    "generate, chat, bench: [--governor SPEC [--governor-log FILE]] paces decode on heat,\n"
    "power and load; SPEC: tok-s=T,temp=C,power=W,headroom=H,slowdown=X,period=S,stale=S,\n"
    "min-threads=N,max-threads=N,skip=N,zones=P1:P2,zone-types=T1:T2,power-path=P\n";

int run_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kiln-run: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

static int parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  errno = 0;
  if (!s)
    return run_fail("%s needs a value", flag);
  if (!*s || *s == '-' || *s == '+')
    return run_fail("%s expects a number in %llu..%llu, got '%s'", flag,
                    (unsigned long long)lo, (unsigned long long)hi, s ? s : "");
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return run_fail("%s expects a number in %llu..%llu, got '%s'", flag,
                    (unsigned long long)lo, (unsigned long long)hi, s);
  *out = v;
  return 0;
}

static int parse_u32(const char *flag, const char *s, uint32_t lo, uint32_t hi, uint32_t *out) {
  uint64_t v;
  if (parse_u64(flag, s, lo, hi, &v))
    return 1;
  *out = (uint32_t)v;
  return 0;
}

/* A float in [lo, hi] (lo excluded when open_lo). */
static int parse_f32(const char *flag, const char *s, float lo, float hi, int open_lo,
                     float *out) {
  char *end = NULL;
  errno = 0;
  if (!s)
    return run_fail("%s needs a value", flag);
  double v = *s ? strtod(s, &end) : NAN;
  if (!*s || errno || *end || !isfinite(v) || v > hi || v < lo || (open_lo && v == lo))
    return run_fail("%s expects a number in %s%g, %g], got '%s'", flag, open_lo ? "(" : "[",
                    (double)lo, (double)hi, s);
  *out = (float)v;
  return 0;
}

/* Parses the arguments after the subcommand; positional ones fill pos[] in order. */
static int parse(int argc, char **argv, const char *cmd, run_options_t *o) {
  const int chat = !strcmp(cmd, "chat"), ppl = !strcmp(cmd, "ppl");
  const int gen = chat || !strcmp(cmd, "generate"); /* chat takes generate's sampling flags */
  const int bench = !strcmp(cmd, "bench");
  const char **pos[2] = {&o->artifact, ppl ? &o->text : NULL};
  int n_pos = 0, max_pos = ppl ? 2 : 1;
  for (int i = 2; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int used = 1, bad = 0;
    if (a[0] != '-' || !a[1]) {
      if (n_pos == max_pos)
        return run_fail("unexpected argument '%s'", a);
      *pos[n_pos++] = a;
      continue;
    }
    if (!chat && gen && (!strcmp(a, "-p") || !strcmp(a, "--prompt"))) {
      if (!v)
        return run_fail("%s needs a value", a);
      o->prompt = v;
    }
    else if ((gen || bench) && (!strcmp(a, "-n") || !strcmp(a, "--n-predict")))
      bad = parse_u32(a, v, 0, 1u << 20, &o->n_predict);
    else if (gen && !strcmp(a, "--temp"))
      bad = parse_f32(a, v, 0.0f, 100.0f, 0, &o->sampler.temperature);
    else if (gen && !strcmp(a, "--top-k"))
      bad = parse_u32(a, v, 0, 1u << 24, (uint32_t *)&o->sampler.top_k);
    else if (gen && !strcmp(a, "--top-p"))
      bad = parse_f32(a, v, 0.0f, 1.0f, 1, &o->sampler.top_p);
    else if (gen && !strcmp(a, "--seed"))
      bad = parse_u64(a, v, 0, UINT64_MAX, &o->sampler.seed);
    else if (!chat && gen && !strcmp(a, "--no-bos"))
      o->no_bos = 1, used = 0;
    else if (!chat && gen && !strcmp(a, "--chat"))
      o->chat = 1, used = 0;
    else if (gen && !strcmp(a, "--system")) {
      if (!v)
        return run_fail("%s needs a value", a);
      o->system = v;
    }
    else if (!strcmp(a, "--threads"))
      bad = parse_u32(a, v, 1, 1024, &o->threads);
    else if (!strcmp(a, "--pin"))
      o->pin = 1, used = 0;
    else if (!strcmp(a, "--backend")) {
      if (!v || (strcmp(v, "cpu") && strcmp(v, "vulkan") && strcmp(v, "auto")))
        return run_fail("--backend expects cpu, vulkan or auto%s%s", v ? ", got " : "",
                        v ? v : "");
      o->backend = v;
    }
    else if (!strcmp(a, "--prefetch"))
      o->prefetch = 1, used = 0;
    else if (!strcmp(a, "--weights")) {
      if (!v)
        return run_fail("--weights needs a value (map or huge)");
      if (!strcmp(v, "map"))
        o->weights_memory = KILN_WEIGHTS_MAPPED;
      else if (!strcmp(v, "huge"))
        o->weights_memory = KILN_WEIGHTS_HUGE_PAGES;
      else
        return run_fail("--weights expects 'map' or 'huge', got '%s'", v);
    }
    else if ((gen || bench) && (!strcmp(a, "--governor") || !strcmp(a, "--governor-log"))) {
      if (!v)
        return run_fail("%s needs a value", a);
      *(a[10] ? &o->governor_log : &o->governor) = v;
    }
    else if (!strcmp(a, "--module")) {
      if (!v)
        return run_fail("--module needs a file (kiln compile --base writes one)");
      if (o->n_modules == RUN_MAX_MODULES)
        return run_fail("at most %d --module files", RUN_MAX_MODULES);
      o->modules[o->n_modules++] = v;
    }
    else if (!strcmp(a, "--public-key")) {
      if (!v)
        return run_fail("--public-key needs a file (kiln keygen writes NAME.pub)");
      o->public_key = v;
    }
    else if (ppl && !strcmp(a, "--ctx"))
      bad = parse_u32(a, v, 4, 1u << 24, &o->ctx);
    else if (ppl && !strcmp(a, "--chunks"))
      bad = parse_u32(a, v, 0, 1u << 30, &o->chunks);
    else if (ppl && !strcmp(a, "--batch"))
      bad = parse_u32(a, v, 1, 1u << 20, &o->batch);
    else if (bench && !strcmp(a, "-p"))
      bad = parse_u32(a, v, 1, 1u << 20, &o->prompt_tokens);
    else if (bench && !strcmp(a, "--all-logits"))
      o->all_logits = 1, used = 0;
    else if (bench && !strcmp(a, "-r"))
      bad = parse_u32(a, v, 1, 1000, &o->reps);
    else
      return run_fail("unknown option '%s' for '%s' (run kiln-run without arguments for usage)",
                      a, cmd);
    if (bad)
      return 1;
    i += used;
  }
  if (n_pos < max_pos)
    return run_fail("%s needs %s", cmd, n_pos == 0 ? "an artifact" : "a text file");
  if (gen && !chat && !o->prompt)
    return run_fail("generate needs a prompt (-p)");
  if (gen && !chat && o->system && !o->chat)
    return run_fail("--system needs --chat");
  if (o->governor_log && !o->governor)
    return run_fail("--governor-log needs --governor");
  if (o->chat && o->no_bos)
    return run_fail("--chat and --no-bos do not go together (the template decides)");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "generate") && strcmp(cmd, "chat") && strcmp(cmd, "ppl") &&
      strcmp(cmd, "bench"))
    return run_fail("unknown command '%s' (generate, chat, ppl or bench)", cmd);
  run_options_t o;
  memset(&o, 0, sizeof o);
  o.sampler = kiln_sampler_params_default();
  o.n_predict = !strcmp(cmd, "generate") ? 64 : !strcmp(cmd, "chat") ? 256 : 128;
  o.prompt_tokens = 64; /* the prefill size the benchmarks report */
  o.reps = 5;
  if (parse(argc, argv, cmd, &o))
    return 1;
  o.gpu_profile = !strcmp(cmd, "bench");
  if (!strcmp(cmd, "generate"))
    return o.chat ? run_generate_chat(&o) : run_generate(&o);
  if (!strcmp(cmd, "chat"))
    return run_chat(&o);
  if (!strcmp(cmd, "ppl")) {
    o.all_logits = 1;
    return run_ppl(&o);
  }
  return run_bench(&o);
}

/* The session on --backend: the list of backends kiln_session_create tries in order -
 * vulkan alone must open; auto is {vulkan, cpu} and says why vulkan was passed over. Where
 * the forward passes run goes to stderr. */
static kiln_status_t session_on_backend(const run_options_t *o, const kiln_artifact_t *a,
                                        kiln_session_options_t *so, kiln_session_t **out,
                                        kiln_error_t *err) {
  const char *want = o->backend ? o->backend : "cpu";
  const kiln_backend_t *list[2];
  uint32_t n = 0;
#if defined(KILN_RUN_VULKAN)
  /* bench: GPU time per kernel, dispatches and barriers per decoded token, bytes read
   * (printed when the session ends). */
  if (o->gpu_profile && strcmp(want, "cpu") != 0)
    setenv("KILN_VULKAN_PROFILE", "1", 0);
  if (strcmp(want, "cpu") != 0)
    list[n++] = kiln_vulkan_backend();
#else
  if (!strcmp(want, "vulkan")) {
    err->status = KILN_STATUS_UNSUPPORTED;
    snprintf(err->message, sizeof err->message,
             "this kiln-run was built without Vulkan (KILN_VULKAN=OFF)");
    return err->status;
  }
  if (!strcmp(want, "auto"))
    fprintf(stderr, "kiln-run: backend auto: built without Vulkan; every op on the CPU\n");
#endif
  if (strcmp(want, "vulkan") != 0)
    list[n++] = kiln_cpu_backend();
  so->backends = list;
  so->n_backends = n;
  kiln_status_t st = kiln_session_create(a, so, out, err);
  so->backends = NULL;
  so->n_backends = 0;
  if (st != KILN_STATUS_OK || !strcmp(want, "cpu"))
    return st;
  const char *passed = kiln_session_backend_passed_over(*out);
  if (*passed) {
    fprintf(stderr, "kiln-run: backend auto: vulkan unavailable (%s); every op on the CPU\n",
            passed);
    return st;
  }
  if (kiln_session_backend(*out)->uses_host_memory)
    return st;
  char where[512];
  kiln_session_backend_placement(*out, where, sizeof where);
  fprintf(stderr, "kiln-run: backend %s (%s): %s\n", kiln_session_backend(*out)->name,
          kiln_session_backend_device(*out), where);
  return st;
}

int run_open(const run_options_t *o, kiln_artifact_t **out_artifact,
             kiln_session_t **out_session) {
  kiln_error_t err;
  *out_artifact = NULL;
  *out_session = NULL;
  kiln_artifact_options_t ao = kiln_artifact_options_default();
  ao.weights_memory = o->weights_memory;
  ao.prefetch = (uint32_t)o->prefetch;
  uint8_t key[32];
  if (o->public_key) {
    char text[256];
    FILE *f = fopen(o->public_key, "rb");
    if (!f)
      return run_fail("cannot read the public key '%s'", o->public_key);
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    if (kiln_public_key_parse(text, n, key, &err) != KILN_STATUS_OK)
      return run_fail("%s: %s", o->public_key, err.message);
    ao.public_key = key;
  }
  if (kiln_artifact_open_with(o->artifact, &ao, out_artifact, &err) != KILN_STATUS_OK)
    return run_fail("%s: %s", o->artifact, err.message);
  kiln_session_options_t so = kiln_session_options_default();
  so.n_threads = o->threads;
  so.pin_threads = (uint32_t)o->pin;
  so.sampler = o->sampler;
  so.all_logits = (uint32_t)o->all_logits;
  if (session_on_backend(o, *out_artifact, &so, out_session, &err) != KILN_STATUS_OK) {
    kiln_artifact_close(*out_artifact);
    *out_artifact = NULL;
    return run_fail("%s", err.message);
  }
  if (run_modules_apply(o, o->public_key ? key : NULL, *out_session) ||
      run_governor_attach(o, *out_artifact, *out_session)) {
    run_close(*out_artifact, *out_session);
    *out_artifact = NULL;
    *out_session = NULL;
    return 1;
  }
  return 0;
}

void run_close(kiln_artifact_t *a, kiln_session_t *s) {
  run_governor_close();
  kiln_session_destroy(s);
  kiln_artifact_close(a);
}

int run_tokenize(const kiln_artifact_t *a, const char *text, size_t len, int add_bos,
                 int32_t **out_ids, size_t *out_n) {
  kiln_error_t err;
  size_t n = 0;
  *out_ids = NULL;
  kiln_status_t st = kiln_artifact_tokenize(a, text, len, add_bos, NULL, 0, &n, &err);
  if (st != KILN_STATUS_OK && st != KILN_STATUS_BUFFER_TOO_SMALL)
    return run_fail("%s", err.message);
  int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
  if (!ids)
    return run_fail("out of memory for %zu tokens", n);
  if (kiln_artifact_tokenize(a, text, len, add_bos, ids, n, &n, &err) != KILN_STATUS_OK) {
    free(ids);
    return run_fail("%s", err.message);
  }
  *out_ids = ids;
  *out_n = n;
  return 0;
}

static int put_piece(const kiln_artifact_t *a, int32_t id) {
  char buf[256];
  size_t len = 0;
  kiln_error_t err;
  if (kiln_artifact_detokenize(a, id, buf, sizeof buf, &len, &err) != KILN_STATUS_OK)
    return run_fail("%s", err.message);
  fwrite(buf, 1, len, stdout);
  fflush(stdout);
  return 0;
}

int run_generate(const run_options_t *o) {
  kiln_artifact_t *a;
  kiln_session_t *s;
  if (run_open(o, &a, &s))
    return 1;
  kiln_artifact_info_t info;
  kiln_artifact_info(a, &info);
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = run_tokenize(a, o->prompt, strlen(o->prompt), !o->no_bos, &ids, &n);
  if (!rc && n == 0)
    rc = run_fail("the prompt is empty and --no-bos leaves nothing to start from");
  /* The last generated token needs no forward pass. */
  if (!rc && n + (o->n_predict ? o->n_predict - 1 : 0) > info.max_ctx)
    rc = run_fail("prompt (%zu tokens) + %u generated exceed the artifact's context of %u "
                  "(compile with a larger --ctx)", n, o->n_predict, info.max_ctx);
  kiln_error_t err;
  if (!rc && kiln_session_prefill(s, ids, n, &err) != KILN_STATUS_OK)
    rc = run_fail("%s", err.message);
  if (!rc) {
    fputs(o->prompt, stdout);
    fflush(stdout);
  }
  for (uint32_t generated = 0; !rc && generated < o->n_predict;) {
    int32_t next;
    if (kiln_session_sample(s, &next, &err) != KILN_STATUS_OK) {
      rc = run_fail("%s", err.message);
      break;
    }
    if (next == info.eos_id || next == info.eot_id)
      break;
    rc = put_piece(a, next);
    if (rc || ++generated == o->n_predict)
      break;
    if (kiln_session_decode(s, next, &err) != KILN_STATUS_OK)
      rc = run_fail("%s", err.message);
  }
  if (!rc) {
    fputs("\n", stdout);
    fflush(stdout); /* the text first, then the timings on stderr */
    kiln_session_stats_t st;
    kiln_session_stats(s, &st);
    fprintf(stderr,
            "TTFT: %.2f ms; prefill: %llu tokens, %.1f tok/s; decode: %llu tokens, %.1f tok/s "
            "(%u threads)\n",
            st.ttft_s * 1e3, (unsigned long long)st.prefill_tokens, st.prefill_tok_s,
            (unsigned long long)st.decode_tokens, st.decode_tok_s, st.n_threads);
  }
  free(ids);
  run_close(a, s);
  return rc;
}
