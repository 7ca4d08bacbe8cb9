/* Byte-level BPE (llama.cpp's "bpe" vocabulary, GGUF tokenizer model "gpt2"; Hugging Face's
 * ByteLevel + BPE), as tokenizers computes it:
 *  1. Added tokens (control and user-defined) are cut out of the text first, leftmost
 *     match, longest at one place, and become their ids.
 *  2. Every other stretch is split into pieces by the pre-tokenizer regex, written here as
 *     hand-made scanners (no regex library):
 *       Llama 3  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *                 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *       GPT-2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *     \p{L} / \p{N} are the general categories L* / N* (unicode_classes.c), \s the
 *     White_Space property, and (?i) folds ASCII letters and U+017F (long s) to s, as
 *     Python's `regex` and Oniguruma do. A byte that is not valid UTF-8 is a character of
 *     class "other" of its own, so any input round-trips.
 *  3. A piece's bytes become GPT-2's printable characters (bytes_to_unicode). With
 *     ignore_merges (Llama 3) a piece that is a token is that token; otherwise merge the
 *     adjacent pair of lowest rank, leftmost on ties, until no pair is a merge.
 * Decoding maps each character back to its byte; a token with a character outside the map
 * gives its text as is (tokenizers' ByteLevel decoder), control tokens give nothing.
 * Scratch is allocated per encode call (tokenizing is not on the decode path).
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "unicode_classes.h"

enum { kOther, kLetter, kNumber, kSpace };
#define KILN_BYTE_CHARS 324 /* bytes_to_unicode's code points are all below 256 + 68 */

struct kiln_bpe_s {
  kiln_pretokenizer_t pre;
  int ignore_merges;
  uint16_t byte_cp[256];               /* byte -> its character's code point */
  int16_t cp_byte[KILN_BYTE_CHARS];    /* code point -> byte, -1 if not a byte character */
  uint64_t *merge_keys;                /* open addressing: left << 32 | right */
  int32_t *merge_ids;                  /* merged token, -1 = empty slot */
  uint32_t *merge_ranks;
  size_t merge_mask;
  uint8_t added_first[256];            /* first bytes of the added tokens */
};

/* ---- tables ---------------------------------------------------------------------------- */

static size_t put_utf8(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  out[0] = (char)(0xC0 | (cp >> 6)); /* every byte character is below U+0800 */
  out[1] = (char)(0x80 | (cp & 0x3F));
  return 2;
}

static uint64_t mix(uint64_t k) { /* splitmix64's finaliser */
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ull;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebull;
  return k ^ (k >> 31);
}

static size_t merge_slot(const kiln_bpe_t *b, uint64_t key) {
  size_t i = (size_t)mix(key) & b->merge_mask;
  while (b->merge_ids[i] >= 0 && b->merge_keys[i] != key)
    i = (i + 1) & b->merge_mask;
  return i;
}

/* Rank and result of merging (left, right), or -1. */
static int32_t find_merge(const kiln_bpe_t *b, int32_t left, int32_t right, uint32_t *rank) {
  if (!b->merge_ids)
    return -1;
  size_t i = merge_slot(b, (uint64_t)(uint32_t)left << 32 | (uint32_t)right);
  *rank = b->merge_ranks[i];
  return b->merge_ids[i];
}

static kiln_status_t build_merges(kiln_tokenizer_t *t, kiln_bpe_t *b,
                                  const kiln_vocab_desc_t *d) {
  if (d->n_merges == 0)
    return KILN_STATUS_OK;
  if (!d->merges || !d->merge_lens)
    return KILN_STATUS_INVALID_ARGUMENT;
  size_t cap = 2;
  while (cap < (size_t)d->n_merges * 2)
    cap *= 2;
  b->merge_keys = kiln_tok_malloc(&t->alloc, cap * sizeof *b->merge_keys);
  b->merge_ids = kiln_tok_malloc(&t->alloc, cap * sizeof *b->merge_ids);
  b->merge_ranks = kiln_tok_malloc(&t->alloc, cap * sizeof *b->merge_ranks);
  size_t buf_cap = 64;
  char *buf = kiln_tok_malloc(&t->alloc, buf_cap);
  if (!b->merge_keys || !b->merge_ids || !b->merge_ranks || !buf) {
    kiln_tok_free(&t->alloc, buf);
    return KILN_STATUS_OUT_OF_MEMORY;
  }
  memset(b->merge_ids, 0xFF, cap * sizeof *b->merge_ids);
  b->merge_mask = cap - 1;
  kiln_status_t st = KILN_STATUS_OK;
  for (uint32_t r = 0; r < d->n_merges && st == KILN_STATUS_OK; ++r) {
    const char *m = d->merges[r];
    const size_t len = d->merge_lens[r];
    const char *sp = m ? memchr(m, ' ', len) : NULL;
    if (!sp || sp == m || sp + 1 == m + len || memchr(sp + 1, ' ', (size_t)(m + len - sp - 1))) {
      st = KILN_STATUS_INVALID_ARGUMENT; /* not "left right" */
      break;
    }
    const size_t ln = (size_t)(sp - m), rn = len - ln - 1;
    if (ln + rn > buf_cap) {
      const size_t old_cap = buf_cap;
      buf_cap = 2 * (ln + rn);
      char *nb = kiln_tok_grow(&t->alloc, buf, old_cap, buf_cap);
      if (!nb) {
        st = KILN_STATUS_OUT_OF_MEMORY;
        break;
      }
      buf = nb;
    }
    memcpy(buf, m, ln);
    memcpy(buf + ln, sp + 1, rn);
    const int32_t left = kiln_tok_lookup(t, m, ln), right = kiln_tok_lookup(t, sp + 1, rn);
    const int32_t both = kiln_tok_lookup(t, buf, ln + rn);
    if (left < 0 || right < 0 || both < 0) {
      st = KILN_STATUS_INVALID_ARGUMENT;
      break;
    }
    /* A pair listed twice keeps its last rank, as tokenizers' map does. */
    const uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    size_t i = merge_slot(b, key);
    b->merge_keys[i] = key;
    b->merge_ids[i] = both;
    b->merge_ranks[i] = r;
  }
  kiln_tok_free(&t->alloc, buf);
  return st;
}

kiln_status_t kiln_bpe_build(kiln_tokenizer_t *t, const kiln_vocab_desc_t *d) {
  if (d->pretokenizer != KILN_PRETOKENIZER_LLAMA3 && d->pretokenizer != KILN_PRETOKENIZER_GPT2 &&
      d->pretokenizer != KILN_PRETOKENIZER_SMOLLM)
    return KILN_STATUS_INVALID_ARGUMENT;
  kiln_bpe_t *b = kiln_tok_calloc(&t->alloc, 1, sizeof *b);
  if (!b)
    return KILN_STATUS_OUT_OF_MEMORY;
  t->bpe = b;
  b->pre = d->pretokenizer;
  b->ignore_merges = d->ignore_merges != 0;
  /* GPT-2's bytes_to_unicode: printable bytes are their own code point, the others take
   * U+0100 onwards in byte order. */
  memset(b->cp_byte, 0xFF, sizeof b->cp_byte);
  uint32_t next = 256;
  for (int v = 0; v < 256; ++v) {
    const int printable = (v >= 0x21 && v <= 0x7E) || (v >= 0xA1 && v <= 0xAC) || v >= 0xAE;
    const uint32_t cp = printable ? (uint32_t)v : next++;
    b->byte_cp[v] = (uint16_t)cp;
    b->cp_byte[cp] = (int16_t)v;
    char u[2];
    t->byte_ids[v] = kiln_tok_lookup(t, u, put_utf8(cp, u));
    if (t->byte_ids[v] < 0)
      return KILN_STATUS_INVALID_ARGUMENT; /* a byte-level vocabulary has all 256 */
  }
  for (uint32_t i = 0; i < t->n_user; ++i)
    b->added_first[(uint8_t)t->blob[t->offs[t->user_ids[i]]]] = 1;
  return build_merges(t, b, d);
}

void kiln_bpe_free(const kiln_allocator_t *a, kiln_bpe_t *b) {
  if (!b)
    return;
  kiln_tok_free(a, b->merge_keys);
  kiln_tok_free(a, b->merge_ids);
  kiln_tok_free(a, b->merge_ranks);
  kiln_tok_free(a, b);
}

/* ---- the pre-tokenizer -------------------------------------------------------------------- */

#define KILN_INVALID_CP 0xFFFFFFFFu

static int in_ranges(const kiln_code_range_t *r, size_t n, uint32_t cp) {
  size_t lo = 0, hi = n;
  while (lo < hi) { /* first range with lo > cp */
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].lo <= cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && cp <= r[lo - 1].hi;
}

static int is_white_space(uint32_t cp) { /* PropList.txt White_Space */
  return (cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

static uint8_t classify(uint32_t cp) {
  if (cp == KILN_INVALID_CP)
    return kOther;
  if (cp < 0x80) {
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z')
      return kLetter;
    if (cp >= '0' && cp <= '9')
      return kNumber;
    return is_white_space(cp) ? kSpace : kOther;
  }
  if (is_white_space(cp))
    return kSpace;
  if (in_ranges(kiln_unicode_letters, kiln_unicode_letters_count, cp))
    return kLetter;
  if (in_ranges(kiln_unicode_numbers, kiln_unicode_numbers_count, cp))
    return kNumber;
  return kOther;
}

/* The characters of one stretch of text: code point, class and where each starts. */
typedef struct {
  uint32_t *cp;
  uint8_t *cls;
  size_t *at; /* n + 1 byte offsets */
  size_t n;
} chars_t;

static void decode_utf8(const unsigned char *p, size_t len, chars_t *c) {
  size_t i = 0, n = 0;
  while (i < len) {
    const unsigned char b = p[i];
    uint32_t cp = KILN_INVALID_CP;
    size_t l = 1;
#define CONT(k) (i + (k) < len && (p[i + (k)] & 0xC0) == 0x80)
    if (b < 0x80) {
      cp = b;
    } else if (b >= 0xC2 && b <= 0xDF && CONT(1)) {
      cp = ((b & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu), l = 2;
    } else if (b >= 0xE0 && b <= 0xEF && CONT(1) && CONT(2)) {
      uint32_t v = ((b & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
      if (v >= 0x800 && !(v >= 0xD800 && v <= 0xDFFF))
        cp = v, l = 3;
    } else if (b >= 0xF0 && b <= 0xF4 && CONT(1) && CONT(2) && CONT(3)) {
      uint32_t v = ((b & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) |
                   ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu);
      if (v >= 0x10000 && v <= 0x10FFFF)
        cp = v, l = 4;
    }
#undef CONT
    c->cp[n] = cp;
    c->cls[n] = classify(cp);
    c->at[n++] = i;
    i += l;
  }
  c->at[n] = len;
  c->n = n;
}

static int is_cls(const chars_t *c, size_t k, uint8_t cls) { return k < c->n && c->cls[k] == cls; }
static int is_crlf(const chars_t *c, size_t k) {
  return k < c->n && (c->cp[k] == '\r' || c->cp[k] == '\n');
}

/* \s*[\r\n]+ | \s+(?!\S) | \s+ at a space. */
static size_t match_spaces(const chars_t *c, size_t i, int crlf_rule) {
  size_t end = i;
  while (is_cls(c, end, kSpace))
    ++end;
  if (crlf_rule)
    for (size_t j = end; j > i; --j)
      if (is_crlf(c, j - 1))
        return j;
  /* the run, less its last space when a non-space follows; a single space is \s+ */
  return end == c->n || end - i == 1 ? end : end - 1;
}

static uint32_t fold(const chars_t *c, size_t k) {
  if (k >= c->n)
    return 0;
  const uint32_t cp = c->cp[k];
  if (cp == 0x17F) /* LATIN SMALL LETTER LONG S */
    return 's';
  return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
}

/* 's|'t|'re|'ve|'m|'ll|'d at an apostrophe: the end, or 0. */
static size_t match_contraction(const chars_t *c, size_t i, int fold_case) {
  const uint32_t a = fold_case ? fold(c, i + 1) : (i + 1 < c->n ? c->cp[i + 1] : 0);
  const uint32_t b = fold_case ? fold(c, i + 2) : (i + 2 < c->n ? c->cp[i + 2] : 0);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return i + 3;
  return 0;
}

/* Where the match starting at character i ends (always > i). */
static size_t match_llama3(const chars_t *c, size_t i) {
  if (c->cp[i] == '\'') {
    size_t e = match_contraction(c, i, 1);
    if (e)
      return e;
  }
  size_t k = i; /* [^\r\n\p{L}\p{N}]?\p{L}+ */
  if (!is_cls(c, k, kLetter) && !is_crlf(c, k) && !is_cls(c, k, kNumber) &&
      is_cls(c, k + 1, kLetter))
    ++k;
  if (is_cls(c, k, kLetter)) {
    while (is_cls(c, k, kLetter))
      ++k;
    return k;
  }
  if (is_cls(c, i, kNumber)) { /* \p{N}{1,3} */
    k = i;
    while (k < i + 3 && is_cls(c, k, kNumber))
      ++k;
    return k;
  }
  k = c->cp[i] == ' ' && is_cls(c, i + 1, kOther) ? i + 1 : i; /* ?[^\s\p{L}\p{N}]+[\r\n]* */
  if (is_cls(c, k, kOther)) {
    while (is_cls(c, k, kOther))
      ++k;
    while (is_crlf(c, k))
      ++k;
    return k;
  }
  return match_spaces(c, i, 1);
}

static size_t match_gpt2(const chars_t *c, size_t i) {
  if (c->cp[i] == '\'') {
    size_t e = match_contraction(c, i, 0);
    if (e)
      return e;
  }
  static const uint8_t kinds[3] = {kLetter, kNumber, kOther}; /* ' ?\p{L}+' etc. */
  for (int j = 0; j < 3; ++j) {
    size_t k = c->cp[i] == ' ' && is_cls(c, i + 1, kinds[j]) ? i + 1 : i;
    if (is_cls(c, k, kinds[j])) {
      while (is_cls(c, k, kinds[j]))
        ++k;
      return k;
    }
  }
  return match_spaces(c, i, 0);
}

/* SmolLM's: \p{N} alone (Hugging Face's Digits(individual_digits), llama.cpp's first regex),
 * then GPT-2's regex over each stretch between digits as if it were the whole text (so
 * \s+(?!\S) sees a digit as the end). *seg caches where the current stretch ends. */
static size_t match_smollm(const chars_t *c, size_t i, size_t *seg) {
  if (c->cls[i] == kNumber)
    return i + 1;
  if (*seg <= i) {
    *seg = i;
    while (*seg < c->n && c->cls[*seg] != kNumber)
      ++*seg;
  }
  chars_t stretch = *c;
  stretch.n = *seg;
  return match_gpt2(&stretch, i);
}

/* Where the piece starting at character i ends; *seg starts at 0 for each text. */
static size_t match_piece(kiln_pretokenizer_t pre, const chars_t *c, size_t i, size_t *seg) {
  switch (pre) {
  case KILN_PRETOKENIZER_LLAMA3: return match_llama3(c, i);
  case KILN_PRETOKENIZER_SMOLLM: return match_smollm(c, i, seg);
  default: return match_gpt2(c, i);
  }
}

/* ---- encoding ---------------------------------------------------------------------------- */

typedef struct {
  int32_t id;
  int32_t prev, next;
} sym_t;

typedef struct {
  uint64_t key; /* rank << 32 | position */
  int32_t id;   /* the merged token */
} entry_t;

typedef struct {
  const kiln_tokenizer_t *tok;
  const kiln_bpe_t *bpe;
  int32_t *out;
  size_t cap, count;
  chars_t chars;
  sym_t *syms;
  entry_t *heap;
  size_t heap_n;
  char *mapped;
} encoder_t;

static void emit(encoder_t *e, int32_t id) {
  if (e->count < e->cap)
    e->out[e->count] = id;
  e->count++;
}

static void heap_push(encoder_t *e, entry_t x) {
  size_t i = e->heap_n++;
  while (i > 0 && x.key < e->heap[(i - 1) / 2].key) {
    e->heap[i] = e->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  e->heap[i] = x;
}

static entry_t heap_pop(encoder_t *e) {
  entry_t top = e->heap[0], last = e->heap[--e->heap_n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= e->heap_n)
      break;
    if (c + 1 < e->heap_n && e->heap[c + 1].key < e->heap[c].key)
      c++;
    if (last.key <= e->heap[c].key)
      break;
    e->heap[i] = e->heap[c];
    i = c;
  }
  if (e->heap_n > 0)
    e->heap[i] = last;
  return top;
}

static void push_pair(encoder_t *e, int32_t pos) {
  if (pos < 0 || e->syms[pos].next < 0)
    return;
  uint32_t rank = 0;
  int32_t id = find_merge(e->bpe, e->syms[pos].id, e->syms[e->syms[pos].next].id, &rank);
  if (id >= 0) {
    entry_t x = {(uint64_t)rank << 32 | (uint32_t)pos, id};
    heap_push(e, x);
  }
}

static void encode_piece(encoder_t *e, const unsigned char *p, size_t n) {
  if (e->bpe->ignore_merges) {
    size_t m = 0;
    for (size_t i = 0; i < n; ++i)
      m += put_utf8(e->bpe->byte_cp[p[i]], e->mapped + m);
    int32_t id = kiln_tok_lookup(e->tok, e->mapped, m);
    if (id >= 0) {
      emit(e, id);
      return;
    }
  }
  /* One symbol per byte; a min-heap of (rank, position) of adjacent pairs that merge.
   * Entries go stale when a symbol changes and are checked against the pair when popped. */
  for (size_t i = 0; i < n; ++i) {
    sym_t s = {e->tok->byte_ids[p[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1};
    e->syms[i] = s;
  }
  e->heap_n = 0;
  for (size_t i = 0; i + 1 < n; ++i)
    push_pair(e, (int32_t)i);
  while (e->heap_n > 0) {
    entry_t x = heap_pop(e);
    const int32_t pos = (int32_t)(x.key & 0xFFFFFFFFu);
    sym_t *a = &e->syms[pos];
    if (a->id < 0 || a->next < 0)
      continue;
    sym_t *b = &e->syms[a->next];
    uint32_t rank = 0;
    if (find_merge(e->bpe, a->id, b->id, &rank) != x.id || rank != (uint32_t)(x.key >> 32))
      continue; /* stale */
    a->id = x.id;
    b->id = -1;
    a->next = b->next;
    if (a->next >= 0)
      e->syms[a->next].prev = pos;
    push_pair(e, a->prev);
    push_pair(e, pos);
  }
  for (int32_t i = 0; i >= 0 && (size_t)i < n; i = e->syms[i].next)
    emit(e, e->syms[i].id);
}

static void encode_stretch(encoder_t *e, const unsigned char *p, size_t len) {
  if (len == 0)
    return;
  decode_utf8(p, len, &e->chars);
  size_t seg = 0;
  for (size_t i = 0; i < e->chars.n;) {
    size_t end = match_piece(e->bpe->pre, &e->chars, i, &seg);
    encode_piece(e, p + e->chars.at[i], e->chars.at[end] - e->chars.at[i]);
    i = end;
  }
}

/* The added token starting at text[i], longest first; -1 if none. */
static int32_t added_at(const kiln_tokenizer_t *t, const char *text, size_t len, size_t i) {
  if (!t->bpe->added_first[(uint8_t)text[i]])
    return -1;
  for (uint32_t u = 0; u < t->n_user; ++u) {
    const int32_t id = t->user_ids[u];
    const size_t n = kiln_tok_len(t, id);
    if (n <= len - i && memcmp(text + i, t->blob + t->offs[id], n) == 0)
      return id;
  }
  return -1;
}

kiln_status_t kiln_bpe_encode(const kiln_tokenizer_t *t, const char *text, size_t len,
                              int add_bos, int32_t *out_ids, size_t cap, size_t *out_n) {
  if (len > (size_t)INT32_MAX / 2)
    return KILN_STATUS_OUT_OF_RANGE;
  encoder_t e;
  memset(&e, 0, sizeof e);
  e.tok = t;
  e.bpe = t->bpe;
  e.out = out_ids;
  e.cap = cap;
  if (add_bos)
    emit(&e, t->bos);
  const size_t n = len ? len : 1;
  e.chars.cp = kiln_tok_malloc(&t->alloc, n * sizeof *e.chars.cp);
  e.chars.cls = kiln_tok_malloc(&t->alloc, n);
  e.chars.at = kiln_tok_malloc(&t->alloc, (n + 1) * sizeof *e.chars.at);
  e.syms = kiln_tok_malloc(&t->alloc, n * sizeof *e.syms);
  e.heap = kiln_tok_malloc(&t->alloc, 3 * n * sizeof *e.heap); /* n - 1 seeds + 2 per merge */
  e.mapped = kiln_tok_malloc(&t->alloc, 2 * n);
  kiln_status_t st = KILN_STATUS_OUT_OF_MEMORY;
  if (e.chars.cp && e.chars.cls && e.chars.at && e.syms && e.heap && e.mapped) {
    const unsigned char *p = (const unsigned char *)text;
    size_t start = 0;
    for (size_t i = 0; i < len;) {
      int32_t id = t->n_user ? added_at(t, text, len, i) : -1;
      if (id < 0) {
        ++i;
        continue;
      }
      encode_stretch(&e, p + start, i - start);
      emit(&e, id);
      i += kiln_tok_len(t, id);
      start = i;
    }
    encode_stretch(&e, p + start, len - start);
    st = KILN_STATUS_OK;
  }
  kiln_tok_free(&t->alloc, e.chars.cp);
  kiln_tok_free(&t->alloc, e.chars.cls);
  kiln_tok_free(&t->alloc, e.chars.at);
  kiln_tok_free(&t->alloc, e.syms);
  kiln_tok_free(&t->alloc, e.heap);
  kiln_tok_free(&t->alloc, e.mapped);
  if (st != KILN_STATUS_OK)
    return st;
  *out_n = e.count;
  return e.count > cap ? KILN_STATUS_BUFFER_TOO_SMALL : KILN_STATUS_OK;
}

/* ---- decoding ---------------------------------------------------------------------------- */

kiln_status_t kiln_bpe_piece(const kiln_tokenizer_t *t, int32_t id, char *out_buf, size_t cap,
                             size_t *out_len) {
  const kiln_bpe_t *b = t->bpe;
  const unsigned char *s = (const unsigned char *)t->blob + t->offs[id];
  const size_t len = kiln_tok_len(t, id);
  size_t need = 0;
  int verbatim = 0;
  if (t->types[id] == KILN_TOKEN_TYPE_CONTROL) {
    *out_len = 0;
    return KILN_STATUS_OK;
  }
  for (size_t i = 0; i < len && !verbatim; ++need) { /* every character a byte character? */
    uint32_t cp = s[i];
    size_t l = 1;
    if (s[i] >= 0xC0 && s[i] < 0xE0 && i + 1 < len && (s[i + 1] & 0xC0) == 0x80)
      cp = ((s[i] & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu), l = 2;
    else if (s[i] >= 0x80)
      cp = KILN_INVALID_CP;
    verbatim = cp >= KILN_BYTE_CHARS || b->cp_byte[cp] < 0;
    i += l;
  }
  if (verbatim)
    need = len;
  if (need <= cap) {
    if (verbatim) {
      if (len)
        memcpy(out_buf, s, len);
    } else {
      for (size_t i = 0, o = 0; i < len; ++o) {
        uint32_t cp = s[i] < 0x80 ? s[i] : ((s[i] & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
        out_buf[o] = (char)b->cp_byte[cp];
        i += s[i] < 0x80 ? 1 : 2;
      }
    }
  }
  *out_len = need;
  return need > cap ? KILN_STATUS_BUFFER_TOO_SMALL : KILN_STATUS_OK;
}

/* ---- for tests and the compiler's reader ------------------------------------------------ */

size_t kiln_bpe_split(kiln_pretokenizer_t pre, const char *text, size_t len, size_t *ends,
                      size_t cap) {
  const size_t n = len ? len : 1;
  chars_t c;
  c.cp = malloc(n * sizeof *c.cp);
  c.cls = malloc(n);
  c.at = malloc((n + 1) * sizeof *c.at);
  size_t count = 0;
  if (c.cp && c.cls && c.at && len) {
    decode_utf8((const unsigned char *)text, len, &c);
    size_t seg = 0;
    for (size_t i = 0; i < c.n; ++count) {
      i = match_piece(pre, &c, i, &seg);
      if (count < cap)
        ends[count] = c.at[i];
    }
  }
  free(c.cp);
  free(c.cls);
  free(c.at);
  return count;
}

char kiln_bpe_char_class(uint32_t cp) { return "OLNS"[classify(cp)]; }
