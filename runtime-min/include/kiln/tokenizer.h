/* kiln runtime-min: the tokenizers of Llama-family models, one implementation each:
 * SentencePiece BPE (llama.cpp's "spm" vocabulary: Llama 1/2, TinyLlama) and byte-level BPE
 * (llama.cpp's "bpe" vocabulary, GGUF tokenizer model "gpt2": Llama 3.x, GPT-2 style).
 *
 * Ownership: kiln_tokenizer_create copies everything it needs out of the descriptor, so the
 * caller may free the descriptor's arrays afterwards; kiln_tokenizer_destroy frees it all.
 * Outputs go to caller-sized buffers; encode allocates scratch proportional to the text
 * and frees it before returning (tokenizing is not on the decode path). All of it goes
 * through the descriptor's allocator when it has one.
 */
#ifndef KILN_TOKENIZER_H_
#define KILN_TOKENIZER_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"

struct kiln_allocator_s;

#ifdef __cplusplus
extern "C" {
#endif

/* SentencePiece token types, as stored in tokenizer.ggml.token_type. */
typedef enum kiln_token_type_e {
  KILN_TOKEN_TYPE_UNDEFINED = 0,
  KILN_TOKEN_TYPE_NORMAL = 1,
  KILN_TOKEN_TYPE_UNKNOWN = 2,
  KILN_TOKEN_TYPE_CONTROL = 3,
  KILN_TOKEN_TYPE_USER_DEFINED = 4,
  KILN_TOKEN_TYPE_UNUSED = 5,
  KILN_TOKEN_TYPE_BYTE = 6,
} kiln_token_type_t;

typedef enum kiln_tokenizer_kind_e {
  KILN_TOKENIZER_SPM = 0, /* SentencePiece BPE over scores */
  KILN_TOKENIZER_BPE = 1, /* byte-level BPE over merge ranks */
} kiln_tokenizer_kind_t;

/* Byte-level BPE's pre-tokenizer: the regex that splits text into pieces before merging. */
typedef enum kiln_pretokenizer_e {
  KILN_PRETOKENIZER_LLAMA3 = 0, /* llama.cpp's "llama-bpe" (Llama 3.x) */
  KILN_PRETOKENIZER_GPT2 = 1,   /* GPT-2's */
  KILN_PRETOKENIZER_SMOLLM = 2, /* llama.cpp's "smollm": each digit alone, GPT-2's between */
} kiln_pretokenizer_t;

typedef struct kiln_vocab_desc_s {
  uint32_t n_tokens;
  const char *const *texts;    /* n_tokens UTF-8 strings (not necessarily NUL-terminated) */
  const uint32_t *text_lens;   /* n_tokens lengths in bytes */
  const float *scores;         /* n_tokens merge scores, or NULL (all 0) */
  const int32_t *types;        /* n_tokens kiln_token_type_t values, or NULL (all NORMAL) */
  int32_t bos_id;              /* -1 when absent */
  int32_t eos_id;
  int32_t unk_id;
  int add_space_prefix;        /* prepend U+2581 to the text, as llama.cpp does for SPM */
  /* Byte-level BPE only (kind KILN_TOKENIZER_BPE; zero-initialised means SPM). Token texts
   * are GPT-2's byte-mapped characters, as tokenizer.json and GGUF store them. */
  kiln_tokenizer_kind_t kind;
  kiln_pretokenizer_t pretokenizer;
  int ignore_merges;           /* a piece that is itself a token is that token (Llama 3) */
  uint32_t n_merges;
  const char *const *merges;   /* n_merges "left right" texts, rank 0 first */
  const uint32_t *merge_lens;
  /* Every allocation of the tokenizer, its tables and encode's scratch alike; NULL: malloc.
   * Copied, so it must outlive the tokenizer, not the descriptor. */
  const struct kiln_allocator_s *allocator; /* kiln_allocator_t, kiln/kiln.h */
} kiln_vocab_desc_t;

typedef struct kiln_tokenizer_s kiln_tokenizer_t;

/* KILN_STATUS_INVALID_ARGUMENT for NULL pointers, n_tokens 0 or over INT32_MAX, a NULL text
 * of nonzero length, a type outside 0..6, an id outside [-1, n_tokens) or two tokens with
 * the same text (an empty text counts as "[EMPTY_<id>]", as in llama.cpp); for BPE also an
 * unknown kind or pretokenizer, a byte with no token, or a merge that is not two tokens
 * separated by one space whose concatenation is a token. */
kiln_status_t kiln_tokenizer_create(const kiln_vocab_desc_t *desc, kiln_tokenizer_t **out_tok);
void kiln_tokenizer_destroy(kiln_tokenizer_t *tok);

uint32_t kiln_tokenizer_vocab_size(const kiln_tokenizer_t *tok);
/* A token's stored text (not NUL-terminated; *out_len bytes), as the vocabulary has it:
 * "<s>", "<|eot_id|>", "\xE2\x96\x81the". NULL for an id outside the vocabulary. */
const char *kiln_tokenizer_text(const kiln_tokenizer_t *tok, int32_t id, size_t *out_len);
int32_t kiln_tokenizer_bos(const kiln_tokenizer_t *tok);
int32_t kiln_tokenizer_eos(const kiln_tokenizer_t *tok);

/* Byte-level BPE (as Hugging Face tokenizers computes it; llama.cpp's ids agree):
 * control and user-defined tokens (added tokens) are cut out of the text first, leftmost
 * and longest, and become their ids; the rest is split by the pre-tokenizer regex, each
 * piece's bytes mapped to GPT-2's characters and merged by rank (lowest first, leftmost on
 * ties); with ignore_merges a piece that is a token is taken whole. Bytes that are not
 * valid UTF-8 are characters of their own. Decoding maps the characters back to bytes;
 * control tokens give nothing.
 *
 * Encodes text[0..len) into ids. Writes at most cap ids; *out_n receives the number the
 * full encoding needs, and KILN_STATUS_BUFFER_TOO_SMALL is returned if that exceeds cap.
 * SPM, as llama.cpp with parse_special = false: USER_DEFINED tokens are cut out of the text
 * first; every other piece of text gets U+2581 for spaces (and one in front when
 * add_space_prefix) and is merged by score; control and unused tokens are never formed.
 * Any bytes are accepted. KILN_STATUS_INVALID_ARGUMENT for add_bos without a BOS token,
 * KILN_STATUS_UNSUPPORTED for a byte with no <0xNN>, one-byte or unknown token, and
 * KILN_STATUS_OUT_OF_RANGE for a text over (INT32_MAX - 3) / 3 bytes. */
kiln_status_t kiln_tokenizer_encode(const kiln_tokenizer_t *tok, const char *text, size_t len,
                                    int add_bos, int32_t *out_ids, size_t cap, size_t *out_n);

/* kiln_tokenizer_encode with flags: KILN_ENCODE_ADD_BOS puts BOS first; with
 * KILN_ENCODE_SPECIAL, SPM also cuts control and unknown tokens' texts out of the text as
 * their ids (llama.cpp's parse_special = true), as a chat template's "<s>" and "</s>" need.
 * Byte-level BPE cuts control tokens either way. Other bits: KILN_STATUS_INVALID_ARGUMENT. */
#define KILN_ENCODE_ADD_BOS 1u
#define KILN_ENCODE_SPECIAL 2u
kiln_status_t kiln_tokenizer_encode_ex(const kiln_tokenizer_t *tok, const char *text,
                                       size_t len, unsigned flags, int32_t *out_ids,
                                       size_t cap, size_t *out_n);

/* The bytes one token stands for when detokenised (llama.cpp's token_to_piece with
 * special = false): U+2581 becomes a space, <0xNN> becomes byte NN, user-defined tokens
 * give their text as is, and control, unknown, unused and undefined tokens give nothing.
 * Same size contract as encode, except that nothing is written when cap is too small.
 * KILN_STATUS_OUT_OF_RANGE for an id outside the vocabulary. */
kiln_status_t kiln_tokenizer_piece(const kiln_tokenizer_t *tok, int32_t id, char *out_buf,
                                   size_t cap, size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* KILN_TOKENIZER_H_ */
