/* Llama SentencePiece-BPE tokenizer, following llama.cpp's "spm" vocabulary
 * (llm_tokenizer_spm_session, tokenizer_st_partition, token_to_piece in llama-vocab.cpp)
 * with parse_special = false. Deliberate differences:
 * - control and unused tokens are never formed by merges (llama.cpp would form one whose
 *   text two adjacent symbols happen to spell; SentencePiece never does);
 * - where llama.cpp aborts or throws: duplicate texts and token types outside 0..6 are
 *   rejected at create time, a byte with no <0xNN> or one-byte token falls back to unk,
 *   and with no unk either encode returns KILN_STATUS_UNSUPPORTED.
 */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kSpace[3] = {'\xE2', '\x96', '\x81'}; /* U+2581 */

static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; ++i)
    h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

/* The tokenizer's allocation helpers (tokenizer_internal.h). */
#define KILN_TOK_HEADER 16u
void *kiln_tok_malloc(const kiln_allocator_t *a, size_t n) {
  if (!a || !a->alloc)
    return malloc(n ? n : 1);
  if (n > SIZE_MAX - KILN_TOK_HEADER)
    return NULL;
  unsigned char *p = (unsigned char *)a->alloc(a->user, n + KILN_TOK_HEADER, 16);
  if (!p)
    return NULL;
  memcpy(p, &n, sizeof n);
  return p + KILN_TOK_HEADER;
}

void kiln_tok_free(const kiln_allocator_t *a, void *ptr) {
  if (!ptr)
    return;
  if (!a || !a->alloc) {
    free(ptr);
    return;
  }
  unsigned char *p = (unsigned char *)ptr - KILN_TOK_HEADER;
  size_t n;
  memcpy(&n, p, sizeof n);
  a->free(a->user, p, n + KILN_TOK_HEADER);
}

void *kiln_tok_calloc(const kiln_allocator_t *a, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size)
    return NULL;
  void *p = kiln_tok_malloc(a, count * size);
  if (p)
    memset(p, 0, count * size);
  return p;
}

void *kiln_tok_grow(const kiln_allocator_t *a, void *ptr, size_t old_n, size_t n) {
  void *q = kiln_tok_malloc(a, n);
  if (q && ptr)
    memcpy(q, ptr, old_n < n ? old_n : n);
  if (q)
    kiln_tok_free(a, ptr);
  return q;
}

int32_t kiln_tok_lookup(const kiln_tokenizer_t *t, const char *s, size_t len) {
  for (size_t i = hash_bytes(s, len) & t->mask;; i = (i + 1) & t->mask) {
    uint32_t v = t->slots[i];
    if (v == 0)
      return -1;
    int32_t id = (int32_t)(v - 1);
    if (kiln_tok_len(t, id) == len && memcmp(t->blob + t->offs[id], s, len) == 0)
      return id;
  }
}

/* Tokens the merge loop may form from text: control and unused ones never are. */
static int32_t lookup_text(const kiln_tokenizer_t *t, const char *s, size_t len) {
  int32_t id = kiln_tok_lookup(t, s, len);
  if (id < 0 || t->types[id] == KILN_TOKEN_TYPE_CONTROL ||
      t->types[id] == KILN_TOKEN_TYPE_UNUSED)
    return -1;
  return id;
}

static kiln_status_t validate(const kiln_vocab_desc_t *d) {
  if (!d->texts || !d->text_lens || d->n_tokens == 0 || d->n_tokens > INT32_MAX)
    return KILN_STATUS_INVALID_ARGUMENT;
  int64_t n = d->n_tokens;
  if (d->bos_id < -1 || d->bos_id >= n || d->eos_id < -1 || d->eos_id >= n ||
      d->unk_id < -1 || d->unk_id >= n)
    return KILN_STATUS_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < d->n_tokens; ++i) {
    if (!d->texts[i] && d->text_lens[i] != 0)
      return KILN_STATUS_INVALID_ARGUMENT;
    if (d->types && (d->types[i] < 0 || d->types[i] > KILN_TOKEN_TYPE_BYTE))
      return KILN_STATUS_INVALID_ARGUMENT;
  }
  return KILN_STATUS_OK;
}

/* llama.cpp renames an empty token text to "[EMPTY_<id>]". */
static size_t empty_name(char *buf, uint32_t id) {
  char tmp[24];
  int k = snprintf(tmp, sizeof tmp, "[EMPTY_%u]", (unsigned)id);
  if (buf)
    memcpy(buf, tmp, (size_t)k);
  return (size_t)k;
}

static int cmp_user(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y; /* keys sort longest text first, then lowest id */
}

static kiln_status_t build(kiln_tokenizer_t *t, const kiln_vocab_desc_t *d) {
  const uint32_t n = d->n_tokens;
  size_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    size_t len = d->text_lens[i] ? d->text_lens[i] : empty_name(NULL, i);
    if (len > SIZE_MAX - total)
      return KILN_STATUS_OUT_OF_MEMORY;
    total += len;
  }
  size_t cap = 2;
  while (cap < (size_t)n * 2)
    cap *= 2;
  t->blob = kiln_tok_malloc(&t->alloc, total ? total : 1);
  t->offs = kiln_tok_malloc(&t->alloc, ((size_t)n + 1) * sizeof *t->offs);
  t->scores = kiln_tok_malloc(&t->alloc, (size_t)n * sizeof *t->scores);
  t->types = kiln_tok_malloc(&t->alloc, (size_t)n * sizeof *t->types);
  t->slots = kiln_tok_calloc(&t->alloc, cap, sizeof *t->slots);
  t->user_ids = kiln_tok_malloc(&t->alloc, (size_t)n * sizeof *t->user_ids);
  uint64_t *keys = kiln_tok_malloc(&t->alloc, (size_t)n * sizeof *keys);
  if (!t->blob || !t->offs || !t->scores || !t->types || !t->slots || !t->user_ids || !keys) {
    kiln_tok_free(&t->alloc, keys);
    return KILN_STATUS_OUT_OF_MEMORY;
  }
  t->mask = cap - 1;
  size_t pos = 0;
  for (uint32_t i = 0; i < n; ++i) {
    t->offs[i] = pos;
    if (d->text_lens[i]) {
      memcpy(t->blob + pos, d->texts[i], d->text_lens[i]);
      pos += d->text_lens[i];
    } else {
      pos += empty_name(t->blob + pos, i);
    }
    t->scores[i] = d->scores ? d->scores[i] : 0.0f;
    t->types[i] = d->types ? d->types[i] : KILN_TOKEN_TYPE_NORMAL;
  }
  t->offs[n] = pos;
  for (uint32_t i = 0; i < n; ++i) {
    size_t len = kiln_tok_len(t, (int32_t)i);
    size_t s = hash_bytes(t->blob + t->offs[i], len) & t->mask;
    for (; t->slots[s] != 0; s = (s + 1) & t->mask) {
      int32_t o = (int32_t)(t->slots[s] - 1);
      if (kiln_tok_len(t, o) == len &&
          memcmp(t->blob + t->offs[o], t->blob + t->offs[i], len) == 0) {
        kiln_tok_free(&t->alloc, keys); /* llama.cpp asserts every text is unique */
        return KILN_STATUS_INVALID_ARGUMENT;
      }
    }
    t->slots[s] = i + 1;
    /* Cut out of the text before merging: user-defined tokens, and for byte-level BPE
     * also control tokens (Hugging Face matches every added token, special or not). SPM
     * lists its control and unknown tokens too, cut only with KILN_ENCODE_SPECIAL. */
    if (t->types[i] == KILN_TOKEN_TYPE_USER_DEFINED ||
        t->types[i] == KILN_TOKEN_TYPE_CONTROL ||
        (d->kind != KILN_TOKENIZER_BPE && t->types[i] == KILN_TOKEN_TYPE_UNKNOWN)) {
      keys[t->n_user++] = (uint64_t)(UINT32_MAX - (uint32_t)len) << 32 | i;
      t->n_user_defined += t->types[i] == KILN_TOKEN_TYPE_USER_DEFINED;
    }
  }
  qsort(keys, t->n_user, sizeof *keys, cmp_user);
  for (uint32_t i = 0; i < t->n_user; ++i)
    t->user_ids[i] = (int32_t)(keys[i] & 0xFFFFFFFFu);
  kiln_tok_free(&t->alloc, keys);
  /* byte_to_token: "<0xNN>", else the one-byte text; unk instead of llama.cpp's throw. */
  static const char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    char one = (char)b;
    int32_t id = kiln_tok_lookup(t, name, sizeof name);
    if (id < 0)
      id = kiln_tok_lookup(t, &one, 1);
    t->byte_ids[b] = id >= 0 ? id : d->unk_id;
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_tokenizer_create(const kiln_vocab_desc_t *desc, kiln_tokenizer_t **out_tok) {
  if (!out_tok)
    return KILN_STATUS_INVALID_ARGUMENT;
  *out_tok = NULL;
  if (!desc)
    return KILN_STATUS_INVALID_ARGUMENT;
  KILN_RETURN_IF_ERROR(validate(desc));
  kiln_allocator_t alloc = {0};
  if (desc->allocator) {
    if (!desc->allocator->alloc || !desc->allocator->free)
      return KILN_STATUS_INVALID_ARGUMENT;
    alloc = *desc->allocator;
  }
  kiln_tokenizer_t *t = kiln_tok_calloc(&alloc, 1, sizeof *t);
  if (!t)
    return KILN_STATUS_OUT_OF_MEMORY;
  t->alloc = alloc;
  t->n = desc->n_tokens;
  t->bos = desc->bos_id;
  t->eos = desc->eos_id;
  t->unk = desc->unk_id;
  t->add_space_prefix = desc->add_space_prefix != 0;
  kiln_status_t st = build(t, desc);
  if (st == KILN_STATUS_OK && desc->kind == KILN_TOKENIZER_BPE)
    st = kiln_bpe_build(t, desc);
  else if (st == KILN_STATUS_OK && desc->kind != KILN_TOKENIZER_SPM)
    st = KILN_STATUS_INVALID_ARGUMENT;
  if (st != KILN_STATUS_OK) {
    kiln_tokenizer_destroy(t);
    return st;
  }
  *out_tok = t;
  return KILN_STATUS_OK;
}

void kiln_tokenizer_destroy(kiln_tokenizer_t *tok) {
  if (!tok)
    return;
  kiln_tok_free(&tok->alloc, tok->blob);
  kiln_tok_free(&tok->alloc, tok->offs);
  kiln_tok_free(&tok->alloc, tok->scores);
  kiln_tok_free(&tok->alloc, tok->types);
  kiln_tok_free(&tok->alloc, tok->slots);
  kiln_tok_free(&tok->alloc, tok->user_ids);
  kiln_bpe_free(&tok->alloc, tok->bpe);
  const kiln_allocator_t alloc = tok->alloc;
  kiln_tok_free(&alloc, tok);
}

uint32_t kiln_tokenizer_vocab_size(const kiln_tokenizer_t *tok) { return tok ? tok->n : 0; }
const char *kiln_tokenizer_text(const kiln_tokenizer_t *tok, int32_t id, size_t *out_len) {
  if (!tok || !out_len || id < 0 || (uint32_t)id >= tok->n)
    return NULL;
  *out_len = kiln_tok_len(tok, id);
  return tok->blob + tok->offs[id];
}
int32_t kiln_tokenizer_bos(const kiln_tokenizer_t *tok) { return tok ? tok->bos : -1; }
int32_t kiln_tokenizer_eos(const kiln_tokenizer_t *tok) { return tok ? tok->eos : -1; }

/* ---- encoding ---------------------------------------------------------------------- */

typedef struct {
  uint32_t off, n; /* n == 0 once merged into its left neighbour */
  int32_t prev, next;
} symbol_t;

typedef struct {
  float score;
  int32_t left, right;
  uint32_t size;
} bigram_t;

typedef struct {
  const kiln_tokenizer_t *tok;
  int32_t *out;
  size_t cap, count;
  const char *text; /* the escaped fragment being tokenized */
  symbol_t *syms;
  bigram_t *heap;
  size_t heap_n;
} session_t;

static void emit(session_t *s, int32_t id) {
  if (s->count < s->cap)
    s->out[s->count] = id;
  s->count++;
}

/* Highest score first; equal scores: leftmost first (llama.cpp's llm_bigram_spm order). */
static int before(const bigram_t *a, const bigram_t *b) {
  return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(session_t *s, bigram_t b) {
  size_t i = s->heap_n++;
  while (i > 0 && before(&b, &s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->heap[i] = b;
}

static bigram_t heap_pop(session_t *s) {
  bigram_t top = s->heap[0], last = s->heap[--s->heap_n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= s->heap_n)
      break;
    if (c + 1 < s->heap_n && before(&s->heap[c + 1], &s->heap[c]))
      c++;
    if (!before(&s->heap[c], &last))
      break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (s->heap_n > 0)
    s->heap[i] = last;
  return top;
}

static void try_add_bigram(session_t *s, int32_t left, int32_t right) {
  if (left < 0 || right < 0)
    return;
  uint32_t size = s->syms[left].n + s->syms[right].n; /* right follows left in the text */
  int32_t id = lookup_text(s->tok, s->text + s->syms[left].off, size);
  if (id < 0)
    return;
  bigram_t b = {s->tok->scores[id], left, right, size};
  heap_push(s, b);
}

/* llama.cpp: a lead byte's high nibble gives the length; continuation bytes count as 1. */
static uint32_t utf8_len(char c) {
  static const uint8_t lookup_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup_len[(uint8_t)c >> 4];
}

static kiln_status_t tokenize_fragment(session_t *s, uint32_t len) {
  int32_t n_syms = 0;
  for (uint32_t off = 0; off < len; ++n_syms) {
    uint32_t n = utf8_len(s->text[off]);
    if (n > len - off)
      n = len - off;
    symbol_t sym = {off, n, n_syms - 1, off + n == len ? -1 : n_syms + 1};
    s->syms[n_syms] = sym;
    off += n;
  }
  s->heap_n = 0;
  for (int32_t i = 1; i < n_syms; ++i)
    try_add_bigram(s, i - 1, i);
  while (s->heap_n > 0) {
    bigram_t b = heap_pop(s);
    symbol_t *l = &s->syms[b.left], *r = &s->syms[b.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
      continue; /* stale: one side was merged since */
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0)
      s->syms[r->next].prev = b.left;
    try_add_bigram(s, l->prev, b.left);
    try_add_bigram(s, b.left, l->next);
  }
  /* llama.cpp's resegment also retries via the merge that built a symbol, but every merged
   * symbol is a token by construction, so only unmerged characters can miss. */
  for (int32_t i = 0; i != -1; i = s->syms[i].next) {
    const symbol_t *sym = &s->syms[i];
    int32_t id = lookup_text(s->tok, s->text + sym->off, sym->n);
    if (id >= 0) {
      emit(s, id);
      continue;
    }
    for (uint32_t j = 0; j < sym->n; ++j) {
      id = s->tok->byte_ids[(uint8_t)s->text[sym->off + j]];
      if (id < 0)
        return KILN_STATUS_UNSUPPORTED;
      emit(s, id);
    }
  }
  return KILN_STATUS_OK;
}

typedef struct {
  size_t off, len;
  int32_t token; /* -1: raw text */
} fragment_t;

static const char *find_bytes(const char *h, size_t hn, const char *nd, size_t nn) {
  for (size_t i = 0; nn <= hn && i <= hn - nn; ++i) {
    const char *p = memchr(h + i, nd[0], hn - nn - i + 1);
    if (!p)
      return NULL;
    i = (size_t)(p - h);
    if (memcmp(p, nd, nn) == 0)
      return p;
  }
  return NULL;
}

/* tokenizer_st_partition: user-defined tokens (with parse_special also control and
 * unknown ones) are cut out of the raw text first, longest first, each at every
 * non-overlapping occurrence left to right. */
static size_t partition(const kiln_tokenizer_t *t, const char *text, size_t len, int special,
                        fragment_t *a, fragment_t *b, fragment_t **out) {
  size_t n = 1;
  a[0].off = 0;
  a[0].len = len;
  a[0].token = -1;
  for (uint32_t u = 0; u < t->n_user; ++u) {
    const int32_t id = t->user_ids[u];
    if (!special && t->types[id] != KILN_TOKEN_TYPE_USER_DEFINED)
      continue;
    const char *nd = t->blob + t->offs[id];
    const size_t nn = kiln_tok_len(t, id);
    size_t m = 0;
    for (size_t f = 0; f < n; ++f) {
      if (a[f].token >= 0) {
        b[m++] = a[f];
        continue;
      }
      size_t off = a[f].off, rem = a[f].len;
      const char *p;
      while (rem > 0 && (p = find_bytes(text + off, rem, nd, nn)) != NULL) {
        size_t at = (size_t)(p - text);
        if (at > off)
          b[m++] = (fragment_t){off, at - off, -1};
        b[m++] = (fragment_t){at, nn, id};
        rem -= at - off + nn;
        off = at + nn;
      }
      if (rem > 0)
        b[m++] = (fragment_t){off, rem, -1};
    }
    fragment_t *tmp = a;
    a = b;
    b = tmp;
    n = m;
  }
  *out = a;
  return n;
}

kiln_status_t kiln_tokenizer_encode(const kiln_tokenizer_t *tok, const char *text, size_t len,
                                    int add_bos, int32_t *out_ids, size_t cap, size_t *out_n) {
  return kiln_tokenizer_encode_ex(tok, text, len, add_bos ? KILN_ENCODE_ADD_BOS : 0u, out_ids,
                                  cap, out_n);
}

kiln_status_t kiln_tokenizer_encode_ex(const kiln_tokenizer_t *tok, const char *text,
                                       size_t len, unsigned flags, int32_t *out_ids,
                                       size_t cap, size_t *out_n) {
  const int add_bos = (flags & KILN_ENCODE_ADD_BOS) != 0;
  if (!tok || !out_n || (!text && len > 0) || (!out_ids && cap > 0) ||
      (flags & ~(KILN_ENCODE_ADD_BOS | KILN_ENCODE_SPECIAL)))
    return KILN_STATUS_INVALID_ARGUMENT;
  *out_n = 0;
  if (add_bos && tok->bos < 0)
    return KILN_STATUS_INVALID_ARGUMENT;
  if (tok->bpe)
    return kiln_bpe_encode(tok, text, len, add_bos, out_ids, cap, out_n);
  /* Escaped fragments (3 bytes per space, plus a prefix) must index with uint32/int32. */
  if (len > (INT32_MAX - 3) / 3)
    return KILN_STATUS_OUT_OF_RANGE;
  session_t s = {tok, out_ids, cap, 0, NULL, NULL, NULL, 0};
  if (add_bos)
    emit(&s, tok->bos);
  if (len == 0) { /* llama.cpp makes no fragment, so no space prefix either */
    *out_n = s.count;
    return s.count > cap ? KILN_STATUS_BUFFER_TOO_SMALL : KILN_STATUS_OK;
  }
  const int special = (flags & KILN_ENCODE_SPECIAL) != 0;
  const size_t max_esc = 3 * len + 3;
  /* Without SPECIAL only user-defined tokens are cut: none, one fragment. */
  const size_t n_frag = (special ? tok->n_user : tok->n_user_defined) ? 2 * len + 1 : 1;
  char *esc = kiln_tok_malloc(&tok->alloc, max_esc);
  s.syms = kiln_tok_malloc(&tok->alloc, max_esc * sizeof *s.syms);
  s.heap = kiln_tok_malloc(&tok->alloc, 3 * max_esc * sizeof *s.heap); /* n - 1 seeds + 2 per merge */
  fragment_t *fa = kiln_tok_malloc(&tok->alloc, n_frag * sizeof *fa), *fb = kiln_tok_malloc(&tok->alloc, n_frag * sizeof *fb);
  kiln_status_t st = KILN_STATUS_OUT_OF_MEMORY;
  if (esc && s.syms && s.heap && fa && fb) {
    fragment_t *frags;
    size_t nf = partition(tok, text, len, special, fa, fb, &frags);
    int prev_special = 1; /* the first fragment gets the space prefix */
    st = KILN_STATUS_OK;
    for (size_t f = 0; f < nf && st == KILN_STATUS_OK; ++f) {
      if (frags[f].token >= 0) {
        emit(&s, frags[f].token);
        prev_special = 1;
        continue;
      }
      uint32_t m = 0;
      if (tok->add_space_prefix && prev_special) {
        memcpy(esc, kSpace, 3);
        m = 3;
      }
      for (size_t i = frags[f].off; i < frags[f].off + frags[f].len; ++i) {
        if (text[i] == ' ') {
          memcpy(esc + m, kSpace, 3);
          m += 3;
        } else {
          esc[m++] = text[i];
        }
      }
      s.text = esc;
      st = tokenize_fragment(&s, m);
      prev_special = 0;
    }
  }
  kiln_tok_free(&tok->alloc, esc);
  kiln_tok_free(&tok->alloc, s.syms);
  kiln_tok_free(&tok->alloc, s.heap);
  kiln_tok_free(&tok->alloc, fa);
  kiln_tok_free(&tok->alloc, fb);
  if (st != KILN_STATUS_OK)
    return st;
  *out_n = s.count;
  return s.count > cap ? KILN_STATUS_BUFFER_TOO_SMALL : KILN_STATUS_OK;
}

/* ---- decoding ---------------------------------------------------------------------- */

/* token_to_byte: strtol(text.substr(3, 2), 16), for "<0xNN>" texts. */
static uint8_t byte_of(const char *s, size_t len) {
  size_t i = 3, end = len < 5 ? len : 5;
  int neg = 0;
  long v = 0;
  while (i < end && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')))
    i++;
  if (i < end && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  for (; i < end; ++i) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0)
      break;
    v = v * 16 + d;
  }
  return (uint8_t)(neg ? -v : v);
}

kiln_status_t kiln_tokenizer_piece(const kiln_tokenizer_t *tok, int32_t id, char *out_buf,
                                   size_t cap, size_t *out_len) {
  if (!tok || !out_len || (!out_buf && cap > 0))
    return KILN_STATUS_INVALID_ARGUMENT;
  *out_len = 0;
  if (id < 0 || (uint32_t)id >= tok->n)
    return KILN_STATUS_OUT_OF_RANGE;
  if (tok->bpe)
    return kiln_bpe_piece(tok, id, out_buf, cap, out_len);
  const char *s = tok->blob + tok->offs[id];
  const size_t len = kiln_tok_len(tok, id);
  size_t need = 0;
  switch (tok->types[id]) {
  case KILN_TOKEN_TYPE_USER_DEFINED: /* raw text */
    need = len;
    if (need <= cap)
      memcpy(out_buf, s, len);
    break;
  case KILN_TOKEN_TYPE_NORMAL: /* U+2581 -> space */
    for (size_t i = 0; i < len; need++)
      i += (len - i >= 3 && memcmp(s + i, kSpace, 3) == 0) ? 3 : 1;
    if (need <= cap) {
      for (size_t i = 0, o = 0; i < len; o++) {
        int sp = len - i >= 3 && memcmp(s + i, kSpace, 3) == 0;
        out_buf[o] = sp ? ' ' : s[i];
        i += sp ? 3 : 1;
      }
    }
    break;
  case KILN_TOKEN_TYPE_BYTE:
    need = 1;
    if (cap >= 1)
      out_buf[0] = (char)byte_of(s, len);
    break;
  default: /* control, unknown (llama.cpp's special = false), unused, undefined: nothing */
    break;
  }
  *out_len = need;
  return need > cap ? KILN_STATUS_BUFFER_TOO_SMALL : KILN_STATUS_OK;
}
