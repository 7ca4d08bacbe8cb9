/* kiln_session_t: KV cache, scratch, logits, positions, pool and sampler, all allocated at
 * create; prefill/decode only fill positions and call the backend's forward (the CPU
 * backend's is the generated entry point). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/backend.h"

#include "../loader/artifact_internal.h"
#include "../platform/error.h"
#include "../platform/platform.h"
#include "pool.h"
#include "session_internal.h"

/* What the allocator gave for one buffer (freed with its size); the buffer may start past
 * base (buffer()). */
typedef struct {
  void *base;
  size_t size;
} region_t;

#define KILN_SESSION_PLACE_CPUS 64 /* cores a pinned session can move among */

struct kiln_session_s {
  const kiln_artifact_t *artifact;
  kiln_allocator_t user_alloc; /* the caller's (or malloc's) */
  kiln_allocator_t alloc;      /* user_alloc, counting into session_bytes */
  kiln_pool_t *pool;
  kiln_sampler_t *sampler;
  kiln_exec_ctx_t ctx;
  float *logits;       /* [max_batch, vocab] */
  int32_t *positions;  /* [max_batch] */
  region_t kv_mem, scratch_mem, logits_mem, positions_mem;
  uint32_t vocab, max_batch, max_ctx;
  uint32_t n_past;
  uint32_t rows, first_pos; /* of the last forward batch (rows 0 = none yet) */
  uint64_t session_bytes;
  /* statistics since create/reset */
  int decoding, timing_ttft;
  double ttft_start, ttft, prefill_s, decode_s;
  uint64_t prefill_tokens, decode_tokens;
  kiln_session_pacer_t pacer; /* kiln_session_set_governor; before == NULL: unpaced */
  uint32_t max_threads;       /* the pool's */
  uint32_t pinned;            /* threads pinned to a core (options.pin_threads) */
  uint32_t niced;             /* workers at options.thread_nice */
  int32_t cpus[KILN_SESSION_PLACE_CPUS]; /* pinned sessions: the cores, fastest first */
  uint32_t n_cpus, room;      /* ... how many; threads the placement has cores for */
  kiln_session_modules_t modules; /* kiln_session_set_modules */
  const kiln_backend_t *backend;  /* the first of options' backends that opened */
  void *backend_state;
  kiln_backend_host_t host;       /* what the backend was lent: artifact, &ctx */
  char passed_over[512];          /* why the backends before it did not open */
};

kiln_session_options_t kiln_session_options_default(void) {
  kiln_session_options_t o;
  memset(&o, 0, sizeof o);
  o.sampler = kiln_sampler_params_default();
  return o;
}

static void *counting_alloc(void *user, size_t size, size_t alignment) {
  kiln_session_t *s = user;
  void *p = s->user_alloc.alloc(s->user_alloc.user, size, alignment);
  if (p)
    s->session_bytes += size;
  return p;
}

static void counting_free(void *user, void *ptr, size_t size) {
  kiln_session_t *s = user;
  s->user_alloc.free(s->user_alloc.user, ptr, size);
}

#define KILN_SESSION_MAX_PINNED 1024 /* n_threads' bound */

/* One 64-byte aligned buffer of at least 64 bytes. With huge_pages (the KV cache), one of
 * a huge page or more is placed on huge pages where the platform has them: its start
 * aligned to one (up to a page more asked for, never touched) and the advice given before
 * the first touch. Decode reads each layer's cache rows after a whole pass of the weights
 * through the caches, so every 4 KiB page of them took a TLB miss, under a hypervisor a
 * nested page walk (docs/perf.md, "KV cache on 2 MiB pages"). Scratch on huge pages changed
 * nothing measurable, so it keeps its size. */
static void *buffer(kiln_session_t *s, uint64_t bytes, int huge_pages, region_t *out,
                    const char *what, kiln_error_t *err) {
  size_t size = bytes < 64 ? 64 : (size_t)((bytes + 63) & ~(uint64_t)63);
  const size_t huge = huge_pages ? kiln_platform_huge_page_size() : 0;
  const int on_huge = huge && size >= huge && size <= SIZE_MAX - 2 * huge;
  if (on_huge)
    size = (size + huge - 1) / huge * huge;
  const size_t ask = on_huge ? size + huge : size;
  uint8_t *p = kiln_mem_alloc(&s->alloc, ask, 64, what, err);
  if (!p)
    return NULL;
  out->base = p;
  out->size = ask;
  if (!on_huge)
    return p;
  uint8_t *start = (uint8_t *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
  kiln_platform_advise_huge_pages(start, size);
  return start;
}

/* The CPU code's KV cache and scratch, for a backend that uses_host_memory (once). */
static kiln_status_t allocate_host_memory(kiln_session_t *s, kiln_error_t *err) {
  const kiln_artifact_info_t *i = &s->artifact->info;
  if (!s->ctx.kv && !(s->ctx.kv = buffer(s, i->kv_bytes, 1, &s->kv_mem, "the KV cache", err)))
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  if (!s->ctx.scratch &&
      !(s->ctx.scratch = buffer(s, i->scratch_bytes, 0, &s->scratch_mem, "scratch", err)))
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  return KILN_STATUS_OK;
}

static kiln_status_t allocate(kiln_session_t *s, const kiln_session_options_t *o,
                              kiln_error_t *err) {
  uint32_t threads = o->n_threads ? o->n_threads : kiln_platform_physical_cores();
  KILN_RETURN_IF_ERROR(kiln_sampler_create(s->vocab, &o->sampler, &s->alloc, &s->sampler, err));
  KILN_RETURN_IF_ERROR(kiln_pool_create(threads, &s->alloc, &s->pool, err));
  s->logits = buffer(s, (uint64_t)s->max_batch * s->vocab * sizeof(float), 0, &s->logits_mem,
                     "logits", err);
  if (!s->logits)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  s->positions = buffer(s, (uint64_t)s->max_batch * sizeof(int32_t), 0, &s->positions_mem,
                        "positions", err);
  if (!s->positions)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  s->ctx.abi_version = KILN_ABI_VERSION;
  s->ctx.n_threads = threads;
  s->max_threads = threads;
  s->ctx.weights = s->artifact->weights;
  s->ctx.parallel_for = kiln_pool_parallel_for;
  s->ctx.pool = s->pool;
  s->ctx.last_logits_only = o->all_logits ? 0 : 1;
  if (o->pin_threads) {
    int32_t cpus[KILN_SESSION_MAX_PINNED];
    uint32_t n = kiln_platform_cpus_fastest_first(cpus, KILN_SESSION_MAX_PINNED);
    s->pinned = kiln_pool_pin(s->pool, cpus, n < threads ? n : threads);
    s->n_cpus = n < KILN_SESSION_PLACE_CPUS ? n : KILN_SESSION_PLACE_CPUS;
    memcpy(s->cpus, cpus, s->n_cpus * sizeof *cpus);
  }
  s->room = threads;
  if (o->thread_nice)
    s->niced = kiln_pool_set_nice(s->pool, o->thread_nice);
  return KILN_STATUS_OK;
}

/* The first of the options' backends that opens; the others' reasons into passed_over. */
static kiln_status_t open_backend(kiln_session_t *s, const kiln_session_options_t *o,
                                  kiln_error_t *err) {
  const kiln_backend_t *one = o->backend ? o->backend : kiln_cpu_backend();
  const kiln_backend_t *const *list = o->n_backends ? o->backends : &one;
  const uint32_t n = o->n_backends ? o->n_backends : 1;
  if (o->n_backends && !o->backends)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "n_backends %u with no backends",
                          o->n_backends);
  if (o->n_backends && o->backend)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "both backend and backends are set; give one");
  s->host.artifact = s->artifact;
  s->host.ctx = &s->ctx;
  size_t used = 0;
  kiln_status_t st = KILN_STATUS_INVALID_ARGUMENT;
  for (uint32_t k = 0; k < n; ++k) {
    const kiln_backend_t *b = list[k];
    if (!b || !b->open || !b->forward || !b->close)
      return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                            "backend %u (%s) lacks open, forward or close", k,
                            b && b->name ? b->name : "?");
    if (b->uses_host_memory)
      KILN_RETURN_IF_ERROR(allocate_host_memory(s, err));
    if ((st = b->open(&s->host, &s->backend_state, err)) == KILN_STATUS_OK) {
      s->backend = b;
      kiln_error_clear(err); /* an earlier backend's reason is in passed_over */
      return KILN_STATUS_OK;
    }
    const int w = snprintf(s->passed_over + used, sizeof s->passed_over - used, "%s%s",
                           used ? "; " : "", err ? err->message : b->name);
    if (w > 0)
      used = used + (size_t)w < sizeof s->passed_over ? used + (size_t)w
                                                      : sizeof s->passed_over - 1;
  }
  /* none opened: every reason, in order */
  return n == 1 ? st : kiln_error_set(err, st, "no backend opened: %s", s->passed_over);
}

kiln_status_t kiln_session_create(const kiln_artifact_t *artifact,
                                  const kiln_session_options_t *options,
                                  kiln_session_t **out_session, kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!out_session)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = NULL;
  if (!artifact)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "artifact is NULL");
  kiln_session_options_t def = kiln_session_options_default();
  const kiln_session_options_t *o = options ? options : &def;
  if (o->n_threads > 1024)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "n_threads %u is outside 0..1024", o->n_threads);
  if (o->thread_nice < -20 || o->thread_nice > 19)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "thread_nice %d is outside -20..19", (int)o->thread_nice);
  kiln_allocator_t alloc;
  KILN_RETURN_IF_ERROR(kiln_allocator_resolve(o->allocator, &alloc, out_error));
  kiln_session_t *s = kiln_mem_alloc(&alloc, sizeof *s, 64, "the session", out_error);
  if (!s)
    return out_error ? out_error->status : KILN_STATUS_OUT_OF_MEMORY;
  memset(s, 0, sizeof *s);
  s->artifact = artifact;
  s->user_alloc = alloc;
  s->alloc.alloc = counting_alloc;
  s->alloc.free = counting_free;
  s->alloc.user = s;
  s->session_bytes = sizeof *s;
  s->vocab = artifact->info.vocab_size;
  s->max_batch = artifact->info.max_batch;
  s->max_ctx = artifact->info.max_ctx;
  kiln_status_t st = allocate(s, o, out_error);
  if (st == KILN_STATUS_OK)
    st = open_backend(s, o, out_error);
  if (st != KILN_STATUS_OK) {
    kiln_session_destroy(s);
    return st;
  }
  *out_session = s;
  return KILN_STATUS_OK;
}

void kiln_session_destroy(kiln_session_t *s) {
  if (!s)
    return;
  if (s->pacer.detach)
    s->pacer.detach(s->pacer.user);
  if (s->modules.destroy)
    s->modules.destroy(s->modules.user);
  if (s->backend)
    s->backend->close(s->backend_state);
  kiln_pool_destroy(s->pool);
  kiln_sampler_destroy(s->sampler);
  kiln_mem_free(&s->alloc, s->kv_mem.base, s->kv_mem.size);
  kiln_mem_free(&s->alloc, s->scratch_mem.base, s->scratch_mem.size);
  kiln_mem_free(&s->alloc, s->logits_mem.base, s->logits_mem.size);
  kiln_mem_free(&s->alloc, s->positions_mem.base, s->positions_mem.size);
  kiln_allocator_t alloc = s->user_alloc;
  kiln_mem_free(&alloc, s, sizeof *s);
}

/* Checks everything, then runs the tokens in batches of at most max_batch. */
static kiln_status_t forward(kiln_session_t *s, const int32_t *tokens, size_t n,
                             kiln_error_t *err) {
  if (!s || (!tokens && n))
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL session or tokens");
  if (n > (size_t)(s->max_ctx - s->n_past))
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE,
                          "positions %u..%llu exceed the context of %u positions (max_ctx); "
                          "reset the session or compile with a larger --ctx", s->n_past,
                          (unsigned long long)s->n_past + n - 1, s->max_ctx);
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || (uint32_t)tokens[i] >= s->vocab)
      return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE,
                            "token %d (at index %zu) is outside the vocabulary of %u",
                            tokens[i], i, s->vocab);
  kiln_pool_enter(s->pool);
  for (size_t done = 0; done < n;) {
    const uint32_t b = n - done < s->max_batch ? (uint32_t)(n - done) : s->max_batch;
    for (uint32_t i = 0; i < b; ++i)
      s->positions[i] = (int32_t)(s->n_past + i);
    kiln_status_t st = s->backend->forward(s->backend_state, tokens + done, s->positions,
                                           (int32_t)b, s->logits, (int)s->ctx.last_logits_only,
                                           err);
    if (st != KILN_STATUS_OK) {
      s->rows = 0;
      kiln_pool_leave(s->pool);
      return st; /* the backend's message names it (kiln/backend.h) */
    }
    for (uint32_t i = 0; i < s->modules.n_banned; ++i) /* a filter module's bans */
      for (uint32_t r = 0; r < b; ++r)
        s->logits[(size_t)r * s->vocab + (uint32_t)s->modules.banned[i]] = -INFINITY;
    s->rows = b;
    s->first_pos = s->n_past;
    s->n_past += b;
    done += b;
  }
  kiln_pool_leave(s->pool);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_session_prefill(kiln_session_t *s, const int32_t *tokens, size_t n_tokens,
                                   kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  const double t0 = kiln_platform_now();
  KILN_RETURN_IF_ERROR(forward(s, tokens, n_tokens, out_error));
  const double t1 = kiln_platform_now();
  s->prefill_s += t1 - t0;
  s->prefill_tokens += n_tokens;
  if (!s->decoding && n_tokens) {
    if (!s->timing_ttft) {
      s->timing_ttft = 1;
      s->ttft_start = t0;
    }
    s->ttft = t1 - s->ttft_start;
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_session_decode(kiln_session_t *s, int32_t token, kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (s && s->pacer.before)
    s->pacer.before(s->pacer.user);
  const double t0 = kiln_platform_now();
  KILN_RETURN_IF_ERROR(forward(s, &token, 1, out_error));
  const double dt = kiln_platform_now() - t0;
  s->decode_s += dt;
  if (s->pacer.after)
    s->pacer.after(s->pacer.user, s, dt, s->ctx.n_threads);
  s->decode_tokens += 1;
  s->decoding = 1;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_session_sample(kiln_session_t *s, int32_t *out_token, kiln_error_t *out_error) {
  if (!s || !out_token)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "NULL session or output");
  const float *row = kiln_session_logits(s);
  if (!row)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "sample: no logits yet (prefill first)");
  return kiln_sampler_sample(s->sampler, row, out_token, out_error);
}

kiln_sampler_t *kiln_session_sampler(kiln_session_t *s) { return s ? s->sampler : NULL; }

const float *kiln_session_logits(const kiln_session_t *s) {
  if (!s || s->rows == 0)
    return NULL;
  return s->logits + (size_t)(s->rows - 1) * s->vocab;
}

const float *kiln_session_batch_logits(const kiln_session_t *s, uint32_t *out_rows,
                                       uint32_t *out_first_pos) {
  const int any = s && s->rows > 0 && !s->ctx.last_logits_only;
  if (out_rows)
    *out_rows = any ? s->rows : 0;
  if (out_first_pos)
    *out_first_pos = any ? s->first_pos : 0;
  return any ? s->logits : NULL;
}

uint32_t kiln_session_n_past(const kiln_session_t *s) { return s ? s->n_past : 0; }

void kiln_session_reset(kiln_session_t *s) {
  if (!s)
    return;
  s->n_past = 0;
  s->rows = 0;
  s->first_pos = 0;
  s->decoding = s->timing_ttft = 0;
  s->ttft_start = s->ttft = s->prefill_s = s->decode_s = 0;
  s->prefill_tokens = s->decode_tokens = 0;
}

void kiln_session_stats(const kiln_session_t *s, kiln_session_stats_t *out) {
  if (!s || !out)
    return;
  memset(out, 0, sizeof *out);
  out->ttft_s = s->ttft;
  out->prefill_tokens = s->prefill_tokens;
  out->prefill_s = s->prefill_s;
  out->prefill_tok_s = s->prefill_s > 0 ? (double)s->prefill_tokens / s->prefill_s : 0;
  out->decode_tokens = s->decode_tokens;
  out->decode_s = s->decode_s;
  out->decode_tok_s = s->decode_s > 0 ? (double)s->decode_tokens / s->decode_s : 0;
  out->weight_bytes_per_token = s->artifact->info.weight_bytes_per_token;
  out->session_bytes = s->session_bytes;
  out->peak_memory_bytes = s->session_bytes + s->artifact->map.size;
  out->n_threads = s->ctx.n_threads;
  out->pinned_threads = s->pinned;
  out->niced_threads = s->niced;
}

void kiln_session_set_pacer(kiln_session_t *s, const kiln_session_pacer_t *pacer) {
  if (s->pacer.detach)
    s->pacer.detach(s->pacer.user);
  if (pacer)
    s->pacer = *pacer;
  else
    memset(&s->pacer, 0, sizeof s->pacer);
}

uint32_t kiln_session_max_threads(const kiln_session_t *s) { return s->max_threads; }

uint32_t kiln_session_use_threads(kiln_session_t *s, uint32_t n) {
  s->ctx.n_threads = kiln_pool_set_active(s->pool, n < s->room ? n : s->room);
  return s->ctx.n_threads;
}

uint32_t kiln_session_place_threads(kiln_session_t *s, uint32_t skip) {
  if (!s->pinned || s->n_cpus < 2) /* unpinned, or nowhere to move */
    return 0;
  if (skip > s->n_cpus - 1)
    skip = s->n_cpus - 1;
  const uint32_t room = s->n_cpus - skip;
  s->room = room < s->max_threads ? room : s->max_threads;
  kiln_pool_pin(s->pool, s->cpus + skip, s->room);
  kiln_session_use_threads(s, s->ctx.n_threads);
  return skip;
}

void kiln_session_set_modules(kiln_session_t *s, const kiln_session_modules_t *m) {
  s->modules = *m;
  s->ctx.weights = m->weights ? m->weights : s->artifact->weights;
}

const kiln_session_modules_t *kiln_session_modules(const kiln_session_t *s) {
  return &s->modules;
}

const kiln_artifact_t *kiln_session_artifact(const kiln_session_t *s) { return s->artifact; }

const kiln_backend_t *kiln_session_backend(const kiln_session_t *s) {
  return s ? s->backend : NULL;
}

const char *kiln_session_backend_device(const kiln_session_t *s) {
  return s && s->backend && s->backend->device ? s->backend->device(s->backend_state) : "cpu";
}

const char *kiln_session_backend_passed_over(const kiln_session_t *s) {
  return s ? s->passed_over : "";
}

/* The CPU backend: the artifact's code on the session's context (host->ctx), whose KV
 * cache and scratch the session allocated for it. */
static kiln_status_t cpu_open(const kiln_backend_host_t *host, void **state,
                              kiln_error_t *err) {
  (void)err;
  *state = (void *)host;
  return KILN_STATUS_OK;
}

static kiln_status_t cpu_forward(void *state, const int32_t *tokens, const int32_t *positions,
                                 int32_t n, float *logits, int last_only, kiln_error_t *err) {
  (void)last_only; /* ctx.last_logits_only says it to the code */
  const kiln_backend_host_t *host = state;
  const int32_t rc = host->artifact->forward(host->ctx, tokens, positions, n, logits);
  if (rc != 0)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE,
                          "cpu: the model code rejected a batch of %d tokens at position %d "
                          "(returned %d)", n, positions[0], rc);
  return KILN_STATUS_OK;
}

static void cpu_close(void *state) { (void)state; }

const kiln_backend_t *kiln_cpu_backend(void) {
  static const kiln_backend_t cpu = {"cpu", 1, cpu_open, cpu_forward, NULL, NULL, NULL,
                                     cpu_close};
  return &cpu;
}

void kiln_session_backend_placement(const kiln_session_t *s, char *buf, size_t size) {
  if (!buf || size == 0)
    return;
  buf[0] = '\0';
  if (s && s->backend && s->backend->placement)
    s->backend->placement(s->backend_state, buf, size);
}
