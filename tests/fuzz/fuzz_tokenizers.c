/* libFuzzer: runtime-min's tokenizers. The first byte picks one of three:
 *   0  SentencePiece BPE (byte fallback, a user-defined token) on the rest as text: valid
 *      UTF-8 must decode back, with the space the dummy prefix adds before each stretch of
 *      text (at the start and after the user-defined token) and each U+2581 as a space. Not checked for invalid UTF-8: as in llama.cpp, a bad lead byte
 *      swallows the next bytes, a space already escaped to U+2581 among them, and byte
 *      fallback keeps the escape;
 *   1  byte-level BPE (Llama 3 pre-tokenizer, GPT-2 byte characters) on the rest as text:
 *      decoding must give back exactly the bytes, invalid UTF-8 included;
 *   2  a vocabulary made of the rest (NUL-separated token texts; the first bytes pick kind,
 *      types and merges): kiln_tokenizer_create must accept or refuse it cleanly, and a
 *      tokenizer it accepts must encode and decode a fixed text.
 * Any difference aborts. */
#include <stdlib.h>
#include <string.h>

#include "kiln/tokenizer.h"

static kiln_tokenizer_t *g_spm, *g_bpe;

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest for
 * U+0100 upwards; out gets the UTF-8 of byte b's character. */
static size_t gpt2_char(unsigned b, char out[3]) {
  unsigned cp;
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
    cp = b;
  } else {
    unsigned n = 0;
    for (unsigned c = 0; c < b; ++c)
      n += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255));
    cp = 256 + n;
  }
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  out[0] = (char)(0xC0 | (cp >> 6));
  out[1] = (char)(0x80 | (cp & 0x3F));
  return 2;
}

static kiln_tokenizer_t *make_spm(void) {
  static const char *const pieces[] = {"\xe2\x96\x81", "\xe2\x96\x81t", "he", "\xe2\x96\x81the",
                                       "\xe2\x96\x81" "a", "in", "\xe2\x96\x81in", "er", "an",
                                       "\xe2\x96\x81he", "llo", "\xe2\x96\x81hello", "<|user|>"};
  enum { kPieces = sizeof pieces / sizeof *pieces, kN = 3 + 256 + kPieces };
  static char bytes[256][7];
  const char *texts[kN];
  uint32_t lens[kN];
  float scores[kN];
  int32_t types[kN];
  texts[0] = "<unk>", texts[1] = "<s>", texts[2] = "</s>";
  types[0] = KILN_TOKEN_TYPE_UNKNOWN, types[1] = types[2] = KILN_TOKEN_TYPE_CONTROL;
  for (int i = 0; i < 256; ++i) {
    static const char hex[] = "0123456789ABCDEF";
    memcpy(bytes[i], "<0x", 3);
    bytes[i][3] = hex[i >> 4], bytes[i][4] = hex[i & 15], bytes[i][5] = '>', bytes[i][6] = 0;
    texts[3 + i] = bytes[i];
    types[3 + i] = KILN_TOKEN_TYPE_BYTE;
  }
  for (int i = 0; i < kPieces; ++i) {
    texts[259 + i] = pieces[i];
    types[259 + i] = i + 1 == kPieces ? KILN_TOKEN_TYPE_USER_DEFINED : KILN_TOKEN_TYPE_NORMAL;
  }
  for (int i = 0; i < kN; ++i) {
    lens[i] = (uint32_t)strlen(texts[i]);
    scores[i] = -(float)i;
  }
  kiln_vocab_desc_t d;
  memset(&d, 0, sizeof d);
  d.n_tokens = kN, d.texts = texts, d.text_lens = lens, d.scores = scores, d.types = types;
  d.bos_id = 1, d.eos_id = 2, d.unk_id = 0, d.add_space_prefix = 1;
  kiln_tokenizer_t *t = NULL;
  return kiln_tokenizer_create(&d, &t) == KILN_STATUS_OK ? t : NULL;
}

static kiln_tokenizer_t *make_bpe(void) {
  /* 256 byte characters, then merged tokens; "\xc4\xa0" is the space's character. */
  static const char *const merged[] = {"\xc4\xa0t", "he", "\xc4\xa0the", "in", "\xc4\xa0" "a",
                                       "er", "\xc4\xa0in"};
  static const char *const merges[] = {"\xc4\xa0 t", "h e", "\xc4\xa0t he", "i n",
                                       "\xc4\xa0 a", "e r", "\xc4\xa0 in"};
  enum { kMerged = sizeof merged / sizeof *merged, kN = 256 + kMerged };
  static char chars[256][3];
  const char *texts[kN];
  uint32_t lens[kN], merge_lens[kMerged];
  for (unsigned b = 0; b < 256; ++b) {
    lens[b] = (uint32_t)gpt2_char(b, chars[b]);
    texts[b] = chars[b];
  }
  for (int i = 0; i < kMerged; ++i) {
    texts[256 + i] = merged[i];
    lens[256 + i] = (uint32_t)strlen(merged[i]);
    merge_lens[i] = (uint32_t)strlen(merges[i]);
  }
  kiln_vocab_desc_t d;
  memset(&d, 0, sizeof d);
  d.n_tokens = kN, d.texts = texts, d.text_lens = lens;
  d.bos_id = d.eos_id = d.unk_id = -1;
  d.kind = KILN_TOKENIZER_BPE, d.pretokenizer = KILN_PRETOKENIZER_LLAMA3, d.ignore_merges = 1;
  d.n_merges = kMerged, d.merges = merges, d.merge_lens = merge_lens;
  kiln_tokenizer_t *t = NULL;
  return kiln_tokenizer_create(&d, &t) == KILN_STATUS_OK ? t : NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  g_spm = make_spm();
  g_bpe = make_bpe();
  if (!g_spm || !g_bpe)
    abort(); /* the fixed vocabularies must be valid */
  return 0;
}

/* 1 when s[0, n) is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i], len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                                        : (c >> 3) == 30 ? 4 : 0;
    if (!len || i + len > n)
      return 0;
    unsigned cp = len == 1 ? c : c & (0x7F >> len);
    for (unsigned k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        return 0;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    i += len;
  }
  return 1;
}

/* Encodes then decodes text; the decoded bytes (malloc'd). At most 3 ids and 3 bytes per
 * input byte: SPM escapes a space to U+2581, which byte fallback may spell byte by byte. */
static char *round_trip(const kiln_tokenizer_t *t, const char *text, size_t n, size_t *out_n) {
  size_t cap = 3 * n + 8, m = 0;
  int32_t *ids = malloc(cap * sizeof *ids);
  char *back = malloc(4 * n + 16);
  size_t o = 0;
  if (kiln_tokenizer_encode(t, text, n, 0, ids, cap, &m) != KILN_STATUS_OK)
    abort();
  for (size_t i = 0; i < m; ++i) {
    size_t len = 0;
    if (kiln_tokenizer_piece(t, ids[i], back + o, 4 * n + 16 - o, &len) != KILN_STATUS_OK)
      abort();
    o += len;
  }
  free(ids);
  *out_n = o;
  return back;
}

static void fuzz_vocab(const uint8_t *d, size_t n) {
  if (n < 3)
    return;
  const uint8_t flags = d[0], typebits = d[1];
  d += 2, n -= 2;
  const char *texts[64];
  uint32_t lens[64];
  int32_t types[64];
  uint32_t count = 0;
  size_t start = 0;
  for (size_t i = 0; i <= n && count < 64; ++i)
    if (i == n || d[i] == 0) {
      texts[count] = (const char *)d + start;
      lens[count] = (uint32_t)(i - start);
      types[count] = (int32_t)((typebits + count) % 8); /* 7 is out of range on purpose */
      ++count;
      start = i + 1;
    }
  kiln_vocab_desc_t v;
  memset(&v, 0, sizeof v);
  v.n_tokens = count, v.texts = texts, v.text_lens = lens, v.types = (flags & 1) ? types : NULL;
  v.bos_id = (int32_t)(flags >> 4) - 2, v.eos_id = -1, v.unk_id = (flags & 2) ? 0 : -1;
  v.add_space_prefix = (flags >> 2) & 1;
  if (flags & 8) {
    v.kind = KILN_TOKENIZER_BPE;
    v.pretokenizer = (kiln_pretokenizer_t)((flags >> 5) % 3); /* llama3, gpt2, smollm */
    v.n_merges = count / 2;
    v.merges = texts + count - v.n_merges;
    v.merge_lens = lens + count - v.n_merges;
  }
  kiln_tokenizer_t *t = NULL;
  if (kiln_tokenizer_create(&v, &t) != KILN_STATUS_OK)
    return;
  static const char kText[] = "Hello world! \xe2\x96\x81 <s> 12345 \xff\xfe";
  int32_t ids[256];
  size_t m = 0;
  if (kiln_tokenizer_encode(t, kText, sizeof kText - 1, 1, ids, 256, &m) == KILN_STATUS_OK)
    for (size_t i = 0; i < m; ++i) {
      char piece[256];
      size_t len;
      kiln_tokenizer_piece(t, ids[i], piece, sizeof piece, &len);
    }
  kiln_tokenizer_destroy(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *text = (const char *)data + 1;
  const size_t n = size - 1;
  size_t m;
  char *back;
  switch (data[0] % 3) {
  case 0:
    back = round_trip(g_spm, text, n, &m);
    if (n && valid_utf8(data + 1, n)) {
      /* As llama.cpp: the user-defined token is cut out first, and every stretch of text
       * after the start or such a token gets the dummy prefix. */
      static const char kUser[] = "<|user|>";
      const size_t u = sizeof kUser - 1;
      char *want = malloc(2 * n + 1);
      size_t w = 0;
      int fresh = 1;
      for (size_t i = 0; i < n;) {
        if (i + u <= n && !memcmp(text + i, kUser, u)) {
          memcpy(want + w, kUser, u), w += u, i += u, fresh = 1;
          continue;
        }
        if (fresh)
          want[w++] = ' ', fresh = 0;
        if (i + 2 < n && !memcmp(text + i, "\xe2\x96\x81", 3))
          want[w++] = ' ', i += 3;
        else
          want[w++] = text[i++];
      }
      if (m != w || memcmp(back, want, w) != 0)
        abort();
      free(want);
    }
    free(back);
    break;
  case 1:
    back = round_trip(g_bpe, text, n, &m);
    if (m != n || memcmp(back, text, n) != 0)
      abort();
    free(back);
    break;
  default:
    fuzz_vocab(data + 1, n);
  }
  return 0;
}
