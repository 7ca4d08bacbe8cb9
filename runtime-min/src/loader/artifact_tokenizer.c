/* The artifact's tokenizer: built once at open from the header's Tokenizer table with the
 * shared implementation (kiln/tokenizer.h: SentencePiece for model "llama", byte-level BPE
 * for "gpt2"), then used by tokenize and detokenize. */
#include <string.h>

#include "../platform/error.h"
#include "artifact_internal.h"
#include "artifact_schema.h"

typedef struct vocab_arrays_s {
  const char **texts;
  uint32_t *lens;
  float *scores;
  int32_t *types;
  const char **merges;
  uint32_t *merge_lens;
} vocab_arrays_t;

/* Byte-level BPE's fields: the merges (pointing into the mapped header), the pre-tokenizer
 * and ignore_merges. */
static kiln_status_t fill_bpe(const kiln_fb_table_t *t, const kiln_fb_vector_t *merges,
                              vocab_arrays_t *v, kiln_vocab_desc_t *d, kiln_error_t *err) {
  kiln_fb_string_t pre;
  uint8_t ignore;
  if (kiln_fb_string(t, KILN_FB_TOKENIZER_PRETOKENIZER, &pre) ||
      kiln_fb_u8(t, KILN_FB_TOKENIZER_IGNORE_MERGES, 0, &ignore))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed byte-level tokenizer");
  if (strcmp(pre.data, "llama3") == 0)
    d->pretokenizer = KILN_PRETOKENIZER_LLAMA3;
  else if (strcmp(pre.data, "gpt2") == 0)
    d->pretokenizer = KILN_PRETOKENIZER_GPT2;
  else if (strcmp(pre.data, "smollm") == 0)
    d->pretokenizer = KILN_PRETOKENIZER_SMOLLM;
  else
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "tokenizer: pre-tokenizer '%.32s' is not supported (llama3, gpt2, "
                          "smollm)",
                          pre.data);
  for (uint32_t i = 0; i < merges->count; ++i) {
    kiln_fb_string_t s;
    if (kiln_fb_vec_string(merges, i, &s))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "tokenizer: malformed merge %u", i);
    v->merges[i] = s.data;
    v->merge_lens[i] = s.len;
  }
  d->kind = KILN_TOKENIZER_BPE;
  d->ignore_merges = ignore != 0;
  d->n_merges = merges->count;
  d->merges = v->merges;
  d->merge_lens = v->merge_lens;
  return KILN_STATUS_OK;
}

static kiln_status_t fill(const kiln_fb_table_t *t, uint32_t n, vocab_arrays_t *v,
                          kiln_vocab_desc_t *d, kiln_error_t *err) {
  kiln_fb_vector_t toks, scores, types;
  if (kiln_fb_vector(t, KILN_FB_TOKENIZER_TOKENS, 4, &toks) ||
      kiln_fb_vector(t, KILN_FB_TOKENIZER_SCORES, 4, &scores) ||
      kiln_fb_vector(t, KILN_FB_TOKENIZER_TYPES, 4, &types))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed tokenizer vectors");
  if ((scores.count && scores.count != n) || (types.count && types.count != n))
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "tokenizer: %u tokens but %u scores and %u types", n, scores.count,
                          types.count);
  for (uint32_t i = 0; i < n; ++i) {
    kiln_fb_string_t s;
    if (kiln_fb_vec_string(&toks, i, &s))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "tokenizer: malformed token %u", i);
    v->texts[i] = s.data;
    v->lens[i] = s.len;
    v->scores[i] = scores.count ? kiln_fb_vec_f32(&scores, i) : 0.0f;
    v->types[i] = types.count ? kiln_fb_vec_i32(&types, i) : KILN_TOKEN_TYPE_NORMAL;
  }
  d->n_tokens = n;
  d->texts = v->texts;
  d->text_lens = v->lens;
  d->scores = v->scores;
  d->types = v->types;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_loader_build_tokenizer(kiln_artifact_t *a, kiln_error_t *err) {
  int present;
  kiln_fb_table_t t;
  kiln_fb_string_t model;
  kiln_fb_vector_t toks, merges;
  kiln_vocab_desc_t d;
  uint8_t space, bos;
  int32_t eot;
  memset(&d, 0, sizeof d);
  d.allocator = &a->alloc; /* the tokenizer's tables and scratch come from the app's too */
  if (kiln_fb_table(&a->root, KILN_FB_ARTIFACT_TOKENIZER, &t, &present) || !present ||
      kiln_fb_string(&t, KILN_FB_TOKENIZER_MODEL, &model) ||
      kiln_fb_vector(&t, KILN_FB_TOKENIZER_TOKENS, 4, &toks) ||
      kiln_fb_vector(&t, KILN_FB_TOKENIZER_MERGES, 4, &merges) ||
      kiln_fb_i32(&t, KILN_FB_TOKENIZER_BOS_ID, -1, &d.bos_id) ||
      kiln_fb_i32(&t, KILN_FB_TOKENIZER_EOS_ID, -1, &d.eos_id) ||
      kiln_fb_i32(&t, KILN_FB_TOKENIZER_EOT_ID, -1, &eot) ||
      kiln_fb_i32(&t, KILN_FB_TOKENIZER_UNK_ID, -1, &d.unk_id) ||
      kiln_fb_u8(&t, KILN_FB_TOKENIZER_ADD_SPACE_PREFIX, 1, &space) ||
      kiln_fb_u8(&t, KILN_FB_TOKENIZER_ADD_BOS, 1, &bos))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: missing or malformed tokenizer");
  const int bpe = strcmp(model.data, "gpt2") == 0;
  if (!bpe && strcmp(model.data, "llama") != 0)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "tokenizer model '%.32s' is not supported ('llama' or 'gpt2')",
                          model.data);
  const uint32_t n = toks.count;
  if (n != a->info.vocab_size)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "the tokenizer has %u tokens but the model's vocabulary is %u", n,
                          a->info.vocab_size);
  d.add_space_prefix = space != 0;
  a->info.add_bos = bos != 0;
  a->info.bos_id = d.bos_id;
  a->info.eos_id = d.eos_id;
  if (eot < -1 || eot >= (int64_t)n)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "tokenizer: eot id %d is not a token", eot);
  a->info.eot_id = eot;
  kiln_fb_string_t chat, chat_src;
  if (kiln_fb_string(&t, KILN_FB_TOKENIZER_CHAT_TEMPLATE, &chat) ||
      kiln_fb_string(&t, KILN_FB_TOKENIZER_CHAT_TEMPLATE_SOURCE, &chat_src))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed chat template");
  kiln_chat_template_t tmpl = KILN_CHAT_TEMPLATE_NONE;
  if (chat.len && kiln_chat_template_from_name(chat.data, &tmpl) != KILN_STATUS_OK)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "tokenizer: chat template '%.32s' is not one this runtime renders",
                          chat.data);
  a->info.chat_template = (uint32_t)tmpl;
  a->info.chat_template_source = chat_src.data;

  /* Temporary arrays for the descriptor; the tokenizer copies what it keeps. */
  const uint32_t nm = bpe ? merges.count : 0;
  const size_t bytes = (size_t)n * (sizeof(char *) + 3 * sizeof(uint32_t)) +
                       (size_t)nm * (sizeof(char *) + sizeof(uint32_t));
  uint8_t *tmp = kiln_mem_alloc(&a->alloc, bytes, 64, "the tokenizer descriptor", err);
  if (!tmp)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  vocab_arrays_t v;
  v.texts = (const char **)(void *)tmp; /* the pointer arrays first, for alignment */
  v.merges = v.texts + n;
  v.lens = (uint32_t *)(void *)(v.merges + nm);
  v.scores = (float *)(void *)(v.lens + n);
  v.types = (int32_t *)(void *)(v.scores + n);
  v.merge_lens = (uint32_t *)(void *)(v.types + n);
  kiln_status_t st = fill(&t, n, &v, &d, err);
  if (st == KILN_STATUS_OK && bpe)
    st = fill_bpe(&t, &merges, &v, &d, err);
  if (st == KILN_STATUS_OK) {
    st = kiln_tokenizer_create(&d, &a->tokenizer);
    if (st == KILN_STATUS_OUT_OF_MEMORY)
      kiln_error_set(err, st, "cannot allocate the tokenizer's tables (%u tokens)", n);
    else if (st != KILN_STATUS_OK)
      kiln_error_set(err, KILN_STATUS_CORRUPT,
                     "the tokenizer table is invalid (%s: duplicate texts, a type outside 0..6, "
                     "a special id out of range or a bad merge)", kiln_status_message(st));
    if (st != KILN_STATUS_OK && st != KILN_STATUS_OUT_OF_MEMORY)
      st = KILN_STATUS_CORRUPT;
  }
  kiln_mem_free(&a->alloc, tmp, bytes);
  return st;
}

kiln_status_t kiln_artifact_tokenize(const kiln_artifact_t *a, const char *text, size_t len,
                                     int add_bos, int32_t *out_ids, size_t cap, size_t *out_n,
                                     kiln_error_t *out_error) {
  return kiln_artifact_tokenize_ex(a, text, len, add_bos ? KILN_ENCODE_ADD_BOS : 0u, out_ids,
                                   cap, out_n, out_error);
}

kiln_status_t kiln_artifact_tokenize_ex(const kiln_artifact_t *a, const char *text,
                                        size_t len, unsigned flags, int32_t *out_ids,
                                        size_t cap, size_t *out_n, kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!a || (!text && len) || !out_n || (!out_ids && cap))
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "tokenize: NULL artifact, text or output");
  kiln_status_t st = kiln_tokenizer_encode_ex(a->tokenizer, text ? text : "", len, flags,
                                              out_ids, cap, out_n);
  if (st == KILN_STATUS_BUFFER_TOO_SMALL)
    return kiln_error_set(out_error, st, "tokenize: the text needs %zu tokens, room for %zu",
                          *out_n, cap);
  if (st != KILN_STATUS_OK)
    return kiln_error_set(out_error, st, "tokenize: %s", kiln_status_message(st));
  return st;
}

kiln_status_t kiln_artifact_detokenize(const kiln_artifact_t *a, int32_t id, char *out_buf,
                                       size_t cap, size_t *out_len, kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!a || !out_len || (!out_buf && cap))
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "detokenize: NULL artifact or output");
  kiln_status_t st = kiln_tokenizer_piece(a->tokenizer, id, out_buf, cap, out_len);
  if (st == KILN_STATUS_OUT_OF_RANGE)
    return kiln_error_set(out_error, st, "detokenize: token %d is outside the vocabulary of %u",
                          id, a->info.vocab_size);
  if (st != KILN_STATUS_OK)
    return kiln_error_set(out_error, st, "detokenize: token %d needs %zu bytes, room for %zu",
                          id, *out_len, cap);
  return st;
}

const char *kiln_artifact_token_text(const kiln_artifact_t *a, int32_t id, size_t *out_len) {
  return a ? kiln_tokenizer_text(a->tokenizer, id, out_len) : NULL;
}

/* A special token's text, NUL-terminated, for the chat template ("" when absent). */
static int token_text(const kiln_artifact_t *a, int32_t id, char *buf, size_t cap) {
  buf[0] = '\0';
  if (id < 0)
    return 1;
  size_t len = 0;
  const char *p = kiln_tokenizer_text(a->tokenizer, id, &len);
  if (!p || len >= cap || memchr(p, '\0', len))
    return 0;
  memcpy(buf, p, len);
  buf[len] = '\0';
  return 1;
}

kiln_status_t kiln_artifact_chat_format(const kiln_artifact_t *a,
                                        const kiln_chat_message_t *messages, size_t n,
                                        int add_generation_prompt, char *out, size_t cap,
                                        size_t *out_len, kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  char bos[128], eos[128];
  if (!a || !out_len)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "chat: NULL artifact or output");
  if (a->info.chat_template == KILN_CHAT_TEMPLATE_NONE)
    return kiln_error_set(out_error, KILN_STATUS_UNSUPPORTED,
                          "chat: the artifact has no chat template (compile with "
                          "--chat-template NAME)");
  for (size_t i = 0; i < n; ++i)
    if (!messages || !messages[i].role || !messages[i].content)
      return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                            "chat: message %zu (or its role or content) is NULL", i);
  if (!token_text(a, a->info.bos_id, bos, sizeof bos) ||
      !token_text(a, a->info.eos_id, eos, sizeof eos))
    return kiln_error_set(out_error, KILN_STATUS_UNSUPPORTED,
                          "chat: the BOS or EOS token's text is not a short string");
  const kiln_chat_template_t t = (kiln_chat_template_t)a->info.chat_template;
  kiln_status_t st = kiln_chat_format(t, bos, eos, messages, n, add_generation_prompt, out,
                                      cap, out_len);
  if (st == KILN_STATUS_BUFFER_TOO_SMALL)
    return kiln_error_set(out_error, st, "chat: the text needs %zu bytes, room for %zu",
                          *out_len, cap);
  if (st != KILN_STATUS_OK) /* only the role rules are left to refuse */
    return kiln_error_set(out_error, st, "chat: the %s template refuses these roles (%s)",
                          kiln_chat_template_name(t),
                          t == KILN_CHAT_TEMPLATE_LLAMA2
                              ? "an optional system first, then user and assistant in turn"
                              : "system, user and assistant only");
  return st;
}
