/* kiln runtime-min: the public C API an app embeds to run a compiled .kiln artifact.
 *
 * Objects
 *   kiln_artifact_t  an opened, verified artifact: the file mapped read-only, its header
 *                    parsed, the code section loaded and bound, the tokenizer built.
 *                    Immutable after open; any number of sessions may share it, from any
 *                    threads.
 *   kiln_session_t   one conversation: KV cache, scratch, logits, a thread pool and a
 *                    sampler. Not thread-safe: call one session from one thread at a time
 *                    (different sessions may run concurrently).
 *   kiln_sampler_t   next-token selection from a row of logits (owned by a session, or
 *                    created alone for any logits).
 *
 * Ownership
 *   - Every kiln_<object>_t is created by kiln_<object>_create/open, which writes it to
 *     its out_* argument only on success (NULL otherwise), and freed by
 *     kiln_<object>_destroy/close, which accepts NULL.
 *   - An artifact must outlive every session created from it.
 *   - Pointers returned by getters (logits, strings in kiln_artifact_info_t) are borrowed:
 *     they stay valid until the owning object is destroyed (logits: until the next
 *     prefill/decode/reset of that session).
 *   - Input buffers are only read during the call; the runtime keeps no pointer to them.
 *
 * Memory
 *   No hidden allocation: every buffer comes from the caller's kiln_allocator_t (or
 *   malloc when NULL is passed) at open/create time. kiln_session_prefill, _decode,
 *   _sample and kiln_sampler_sample never allocate. Two documented exceptions use malloc:
 *   the tokenizer's tables (built at open) and kiln_artifact_tokenize's scratch;
 *   loading the code section also uses the C library's dynamic loader.
 *
 * Errors
 *   Fallible functions return kiln_status_t (KILN_STATUS_OK = 0; kiln/status.h) and take
 *   an optional `kiln_error_t *out_error` last. When it is not NULL, it receives the same
 *   status and a NUL-terminated, human-readable message naming what was wrong (on success:
 *   KILN_STATUS_OK and an empty message). Bad input is never a crash or an abort.
 *
 * Threads
 *   A session's forward passes run on its own pool of n_threads threads (the caller's
 *   thread plus n_threads - 1 workers created at session create; 1 = no extra thread).
 */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/chat.h"
#include "kiln/status.h"
#include "kiln/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ERROR_MESSAGE_SIZE 256

typedef struct kiln_error_s {
  kiln_status_t status;
  char message[KILN_ERROR_MESSAGE_SIZE];
} kiln_error_t;

/* Caller-provided memory. alloc returns size bytes aligned to `alignment` (a power of two,
 * at most 4096), or NULL; free receives the same pointer and size. Both must be set. */
typedef struct kiln_allocator_s {
  void *(*alloc)(void *user, size_t size, size_t alignment);
  void (*free)(void *user, void *ptr, size_t size);
  void *user;
} kiln_allocator_t;

typedef struct kiln_artifact_s kiln_artifact_t;
typedef struct kiln_session_s kiln_session_t;
typedef struct kiln_sampler_s kiln_sampler_t;

/* ---- artifact -------------------------------------------------------------------- */

typedef struct kiln_artifact_info_s {
  const char *arch;          /* "llama" */
  const char *target_name;   /* "x86-64-v3", ... */
  const char *target_triple;
  uint32_t vocab_size;
  uint32_t dim;
  uint32_t num_layers;
  uint32_t num_heads;
  uint32_t num_kv_heads;
  uint32_t head_dim;
  uint32_t ffn_dim;
  uint32_t context_length;   /* declared by the source model */
  uint32_t max_ctx;          /* positions a session holds (the memory plan) */
  uint32_t max_batch;        /* most tokens one forward pass takes */
  uint64_t kv_bytes;
  uint64_t scratch_bytes;
  uint64_t weight_bytes_per_token;
  uint64_t weights_bytes;    /* size of the weights section */
  uint64_t file_bytes;       /* size of the mapped file */
  uint32_t num_tensors;
  int32_t bos_id;            /* -1 when absent */
  int32_t eos_id;
  int add_bos;               /* the model expects BOS in front of a prompt */
  uint64_t kv_bytes_per_token; /* KV cache bytes one position adds, all layers */
  uint32_t kv_k_format;      /* KV cache K element (ggml type id): 0 f32, 1 f16, 24 int8 */
  uint32_t kv_v_format;      /* KV cache V element: 0 f32, 1 f16 */
  uint32_t weights_memory;   /* kiln_weights_memory_t the artifact's bytes ended up in */
  const uint8_t *weights_data; /* the weights section (read-only), for OS diagnostics */
  int32_t eot_id;            /* end of turn (Llama 3's <|eot_id|>), -1 when absent; like
                                eos_id, it ends a generated reply */
  uint32_t signature;        /* kiln_signature_state_t */
  uint8_t signer_key[32];    /* the trailer's Ed25519 public key; zero when unsigned */
  uint32_t chat_template;    /* kiln_chat_template_t (kiln/chat.h); NONE: no chat */
  const char *chat_template_source; /* the model's Jinja text it came from, "" when none;
                                       valid while the artifact is open */
  const char *governor_defaults; /* the chip's governor SPEC defaults, e.g. "skip=1"
                                    (kiln/governor.h; "" when none): parse them before the
                                    app's own keys, which override */
} kiln_artifact_info_t;

typedef enum kiln_signature_state_e {
  KILN_SIGNATURE_NONE = 0,      /* the artifact is not signed */
  KILN_SIGNATURE_UNCHECKED = 1, /* signed, opened without a public key: not checked */
  KILN_SIGNATURE_VERIFIED = 2,  /* signed by options.public_key and the signature holds */
} kiln_signature_state_t;

/* Where an open artifact's bytes (the weights above all) live. */
typedef enum kiln_weights_memory_e {
  /* Mapped from the file: opens at once, shares the OS's page cache and lets the OS evict
   * and reload pages. The page size is the OS's choice (Linux 6.x maps large page-cache
   * folios of a cached file with 2 MiB pages where it can, often only part of it). */
  KILN_WEIGHTS_MAPPED = 0,
  /* Read into anonymous memory that asks for 2 MiB pages (Linux transparent huge pages,
   * MADV_HUGEPAGE): decode streams every weight once per token, and with 4 KiB pages that
   * is a TLB miss every 4 KiB. Costs a full read at open and memory the OS cannot evict.
   * Where the platform has no such memory (the freestanding build) the file is mapped
   * and weights_memory says KILN_WEIGHTS_MAPPED. */
  KILN_WEIGHTS_HUGE_PAGES = 1,
} kiln_weights_memory_t;

typedef struct kiln_artifact_options_s {
  const kiln_allocator_t *allocator; /* the artifact's small allocations; NULL: malloc */
  uint32_t weights_memory;           /* kiln_weights_memory_t */
  /* The app's Ed25519 public key (32 bytes, from `kiln keygen`), or NULL. When set, only an
   * artifact signed with its secret key opens: an unsigned file, another key's signature or
   * any changed byte is KILN_STATUS_BAD_SIGNATURE, found before the header is parsed and
   * before any code is loaded. */
  const uint8_t *public_key;
  /* KILN_WEIGHTS_MAPPED only: nonzero asks the OS, before anything is read, to read the
   * whole file into the page cache in the background (MADV_WILLNEED), so a cold open's
   * reads are queued at once rather than found one fault or read-ahead window at a time.
   * The pages stay evictable: nothing is ever locked in memory. */
  uint32_t prefetch;
} kiln_artifact_options_t;

/* Reads a public key file written by `kiln keygen` (text: "kiln-ed25519-public-key", then 64
 * hex digits) into out_key[32]. */
kiln_status_t kiln_public_key_parse(const char *text, size_t len, uint8_t out_key[32],
                                    kiln_error_t *out_error);

/* allocator NULL, KILN_WEIGHTS_MAPPED, public_key NULL, prefetch 0. */
kiln_artifact_options_t kiln_artifact_options_default(void);

/* Maps path read-only and verifies it before trusting any byte: preamble (magic, format
 * version, sizes, header xxh64), header (FlatBuffer bounds, identifier "KLN1"), the
 * generated code's ABI version, every section's range, alignment and xxh64, the tensor
 * table, the memory plan and the model config; checks that this CPU has every feature
 * the code requires; then loads the code section (from memory where the OS allows) and
 * binds its entry point. allocator may be NULL (malloc). */
kiln_status_t kiln_artifact_open(const char *path, const kiln_allocator_t *allocator,
                                 kiln_artifact_t **out_artifact, kiln_error_t *out_error);
/* kiln_artifact_open with options (NULL: the defaults); an unknown weights_memory is
 * KILN_STATUS_INVALID_ARGUMENT. */
kiln_status_t kiln_artifact_open_with(const char *path, const kiln_artifact_options_t *options,
                                      kiln_artifact_t **out_artifact,
                                      kiln_error_t *out_error);
void kiln_artifact_close(kiln_artifact_t *artifact);

void kiln_artifact_info(const kiln_artifact_t *artifact, kiln_artifact_info_t *out_info);

/* Text -> token ids; add_bos puts the BOS token first. Writes at most cap ids; *out_n gets
 * the number needed (KILN_STATUS_BUFFER_TOO_SMALL when above cap). Uses malloc scratch. */
kiln_status_t kiln_artifact_tokenize(const kiln_artifact_t *artifact, const char *text,
                                     size_t len, int add_bos, int32_t *out_ids, size_t cap,
                                     size_t *out_n, kiln_error_t *out_error);

/* kiln_artifact_tokenize with KILN_ENCODE_* flags (kiln/tokenizer.h): KILN_ENCODE_SPECIAL
 * turns the texts of control tokens into their ids, as a formatted chat needs. */
kiln_status_t kiln_artifact_tokenize_ex(const kiln_artifact_t *artifact, const char *text,
                                        size_t len, unsigned flags, int32_t *out_ids,
                                        size_t cap, size_t *out_n, kiln_error_t *out_error);

/* kiln_chat_format (kiln/chat.h) with the artifact's template and its tokenizer's BOS and
 * EOS texts: the text to tokenize with KILN_ENCODE_SPECIAL (and KILN_ENCODE_ADD_BOS when
 * info.add_bos, at the start of a conversation). KILN_STATUS_UNSUPPORTED when the artifact
 * has no chat template. Never allocates. */
kiln_status_t kiln_artifact_chat_format(const kiln_artifact_t *artifact,
                                        const kiln_chat_message_t *messages, size_t n,
                                        int add_generation_prompt, char *out, size_t cap,
                                        size_t *out_len, kiln_error_t *out_error);

/* A token's text as the vocabulary stores it (not NUL-terminated, *out_len bytes): "</s>",
 * "<|eot_id|>"; NULL for an id outside the vocabulary. Valid while the artifact is open. */
const char *kiln_artifact_token_text(const kiln_artifact_t *artifact, int32_t id,
                                     size_t *out_len);

/* The bytes token id stands for (empty for control tokens). Same size contract as
 * tokenize; nothing is written when cap is too small. Never allocates. */
kiln_status_t kiln_artifact_detokenize(const kiln_artifact_t *artifact, int32_t id,
                                       char *out_buf, size_t cap, size_t *out_len,
                                       kiln_error_t *out_error);

/* ---- sampler --------------------------------------------------------------------- */

typedef struct kiln_sampler_params_s {
  float temperature; /* <= 0: greedy (argmax, lowest id on ties) */
  int32_t top_k;     /* keep the k largest logits; 0 = all */
  float top_p;       /* keep the smallest set whose probability reaches top_p; (0, 1] */
  uint64_t seed;     /* PRNG seed (the same seed gives the same tokens) */
} kiln_sampler_params_t;

/* Greedy: temperature 0, top_k 0, top_p 1, seed 0. */
kiln_sampler_params_t kiln_sampler_params_default(void);

kiln_status_t kiln_sampler_create(uint32_t vocab_size, const kiln_sampler_params_t *params,
                                  const kiln_allocator_t *allocator,
                                  kiln_sampler_t **out_sampler, kiln_error_t *out_error);
void kiln_sampler_destroy(kiln_sampler_t *sampler);
/* Replaces the parameters and reseeds the PRNG. */
kiln_status_t kiln_sampler_set_params(kiln_sampler_t *sampler,
                                      const kiln_sampler_params_t *params,
                                      kiln_error_t *out_error);
/* Picks a token from logits[0..vocab_size). No allocation. */
kiln_status_t kiln_sampler_sample(kiln_sampler_t *sampler, const float *logits,
                                  int32_t *out_token, kiln_error_t *out_error);

/* ---- session --------------------------------------------------------------------- */

typedef struct kiln_session_options_s {
  uint32_t n_threads;               /* 0: this machine's physical cores */
  const kiln_allocator_t *allocator; /* NULL: malloc */
  kiln_sampler_params_t sampler;    /* the session's sampler */
  uint32_t all_logits;              /* nonzero: every position's logits (perplexity); 0:
                                       only each batch's last position's, which saves the
                                       output matrix for the others */
  /* nonzero: pool thread i runs only on the i-th fastest core this process may use
   * (cpufreq's maximum clock, else arm64's cpu_capacity; one hardware thread per core):
   * the prime core first, then the performance cores. The calling thread takes the first
   * core during each prefill/decode and gets its own affinity back after. 0: the OS
   * places the threads. stats.pinned_threads says how many the OS allowed. */
  uint32_t pin_threads;
  /* nonzero: the pool's workers run at this nice value (-20..19; Linux/Android, per
   * thread), where the OS allows it: raising it (a background summary) always is, lowering
   * it below the process's needs a privilege. stats.niced_threads says how many got it. */
  int32_t thread_nice;
  /* What runs the forward passes (kiln/backend.h), in the order to try them: the first
   * that opens runs the session, and session create fails, with every reason, when none
   * does. Put kiln_cpu_backend() last to fall back to the CPU code, e.g. {vulkan, cpu}.
   * n_backends 0: `backend` alone, or the CPU code when that is NULL too. */
  const struct kiln_backend_s *const *backends;
  uint32_t n_backends;
  const struct kiln_backend_s *backend; /* one backend: the same as a list of it */
} kiln_session_options_t;

/* n_threads 0, allocator NULL, greedy sampler, all_logits 0, pin_threads 0,
 * thread_nice 0, no backends (the CPU code). */
kiln_session_options_t kiln_session_options_default(void);

typedef struct kiln_session_stats_s {
  double ttft_s;             /* first prefill after create/reset until its logits */
  uint64_t prefill_tokens;   /* since create/reset */
  double prefill_s;
  double prefill_tok_s;
  uint64_t decode_tokens;
  double decode_s;
  double decode_tok_s;
  uint64_t weight_bytes_per_token; /* from the memory plan */
  uint64_t session_bytes;    /* everything the session allocated */
  uint64_t peak_memory_bytes; /* session_bytes + the mapped artifact */
  uint32_t n_threads;
  uint32_t pinned_threads;   /* options.pin_threads: threads pinned to a core */
  uint32_t niced_threads;    /* options.thread_nice: workers that got it */
} kiln_session_stats_t;

/* Allocates the KV cache, scratch, logits [max_batch x vocab], positions, sampler buffers
 * and the thread pool - everything the session will ever need. options may be NULL. */
kiln_status_t kiln_session_create(const kiln_artifact_t *artifact,
                                  const kiln_session_options_t *options,
                                  kiln_session_t **out_session, kiln_error_t *out_error);
void kiln_session_destroy(kiln_session_t *session);

/* Evaluates n_tokens tokens at positions n_past, n_past + 1, ... in batches of at most
 * max_batch, then n_past += n_tokens. A position >= max_ctx is KILN_STATUS_OUT_OF_RANGE
 * (checked before anything runs; the session is unchanged), as is a token outside the
 * vocabulary. Afterwards the logits of the last batch are available. */
kiln_status_t kiln_session_prefill(kiln_session_t *session, const int32_t *tokens,
                                   size_t n_tokens, kiln_error_t *out_error);
/* prefill of one token. */
kiln_status_t kiln_session_decode(kiln_session_t *session, int32_t token,
                                  kiln_error_t *out_error);
/* Samples the next token from the last logits with the session's sampler. */
kiln_status_t kiln_session_sample(kiln_session_t *session, int32_t *out_token,
                                  kiln_error_t *out_error);
kiln_sampler_t *kiln_session_sampler(kiln_session_t *session);

/* The last token's logits (vocab_size floats), or NULL before any forward pass. */
const float *kiln_session_logits(const kiln_session_t *session);
/* All rows of the last forward batch: *out_rows rows of vocab_size floats, row i for
 * position *out_first_pos + i (NULL and 0 rows before any forward pass, and in a session
 * created without options.all_logits). Perplexity tools prefill in pieces of at most
 * max_batch tokens and read every row. */
const float *kiln_session_batch_logits(const kiln_session_t *session, uint32_t *out_rows,
                                       uint32_t *out_first_pos);
uint32_t kiln_session_n_past(const kiln_session_t *session);
/* Forgets every position (n_past = 0) and the statistics; keeps every buffer. */
void kiln_session_reset(kiln_session_t *session);
void kiln_session_stats(const kiln_session_t *session, kiln_session_stats_t *out_stats);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H_ */
