/* The tokenizer's tables, shared by spm.c (create, SentencePiece encode/decode) and bpe.c
 * (byte-level BPE's extra tables and encode/decode). Not part of the public API. */
#ifndef KILN_TOKENIZER_INTERNAL_H_
#define KILN_TOKENIZER_INTERNAL_H_

#include "kiln/kiln.h"
#include "kiln/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_bpe_s kiln_bpe_t;

struct kiln_tokenizer_s {
  uint32_t n;
  char *blob;            /* all token texts, back to back */
  size_t *offs;          /* n + 1 offsets into blob */
  float *scores;
  int32_t *types;
  int32_t bos, eos, unk;
  int add_space_prefix;
  uint32_t *slots;       /* open-addressing text -> id + 1 (0 = empty) */
  size_t mask;
  int32_t byte_ids[256]; /* SPM: byte-fallback token per byte; BPE: each byte's token */
  int32_t *user_ids;     /* tokens cut out of the text first, longest text first */
  uint32_t n_user;
  uint32_t n_user_defined; /* of them USER_DEFINED (SPM cuts only these without SPECIAL) */
  kiln_bpe_t *bpe;       /* byte-level BPE's tables; NULL for SPM */
  kiln_allocator_t alloc; /* the descriptor's allocator; alloc.alloc NULL: malloc */
};

/* Every allocation of the tokenizer - its tables and encode's scratch - goes through these,
 * so an app's allocator sees (and may refuse) all of it. With a caller's allocator each
 * block carries its size in a 16-byte header (the allocator's free wants it back). */
void *kiln_tok_malloc(const kiln_allocator_t *a, size_t n);
void *kiln_tok_calloc(const kiln_allocator_t *a, size_t count, size_t size);
void kiln_tok_free(const kiln_allocator_t *a, void *ptr);
/* realloc without the allocator having one: a new block, the old bytes, the old freed. */
void *kiln_tok_grow(const kiln_allocator_t *a, void *ptr, size_t old_n, size_t n);

/* Any token with exactly this text (all types), or -1. */
int32_t kiln_tok_lookup(const kiln_tokenizer_t *t, const char *s, size_t len);

static inline size_t kiln_tok_len(const kiln_tokenizer_t *t, int32_t id) {
  return t->offs[id + 1] - t->offs[id];
}

/* bpe.c: builds t->bpe (and byte_ids, user_ids) from the descriptor after the shared
 * tables exist; frees them; encode and piece as kiln_tokenizer_encode/_piece document. */
kiln_status_t kiln_bpe_build(kiln_tokenizer_t *t, const kiln_vocab_desc_t *d);
void kiln_bpe_free(const kiln_allocator_t *a, kiln_bpe_t *b);
kiln_status_t kiln_bpe_encode(const kiln_tokenizer_t *t, const char *text, size_t len,
                              int add_bos, int32_t *out_ids, size_t cap, size_t *out_n);
kiln_status_t kiln_bpe_piece(const kiln_tokenizer_t *t, int32_t id, char *out_buf, size_t cap,
                             size_t *out_len);

/* The pre-tokenizer's split of text[0..len): writes up to cap piece end offsets, returns the
 * number of pieces (0 when out of memory). And a code point's class in the scanner: 'L'
 * (\p{L}), 'N' (\p{N}), 'S' (\s) or 'O'. For tests and the compiler's reader. */
size_t kiln_bpe_split(kiln_pretokenizer_t pre, const char *text, size_t len, size_t *ends,
                      size_t cap);
char kiln_bpe_char_class(uint32_t cp);

#ifdef __cplusplus
}
#endif

#endif /* KILN_TOKENIZER_INTERNAL_H_ */
