/* libFuzzer: runtime-min's chat templates (kiln/chat.h) and the special-token encoding a
 * formatted chat goes through. The input is
 *   byte 0: template (mod 5), bit 3: add_generation_prompt, bit 4: detect on the rest;
 *   then NUL-separated role / content pairs (any bytes).
 * Checks: detection of any text returns a family or none; formatting either refuses
 * (only Llama 2's and Zephyr's role rules may) or gives the same length when asked for the
 * size, into a buffer one byte short (BUFFER_TOO_SMALL, the same prefix) and into its exact
 * size; the text encodes with KILN_ENCODE_SPECIAL into BOS and ids of the vocabulary,
 * no more than two per byte. Any difference aborts. */
#include <stdlib.h>
#include <string.h>

#include "kiln/chat.h"
#include "kiln/tokenizer.h"

static kiln_tokenizer_t *g_spm;

/* <unk> <s> </s>, the chat markers as control tokens, 256 byte tokens, a few pieces. */
static kiln_tokenizer_t *make_spm(void) {
  static const char *const special[] = {"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>",
                                        "<|eot_id|>", "<|start_header_id|>",
                                        "<|end_header_id|>"};
  static const char *const pieces[] = {"\xe2\x96\x81", "\xe2\x96\x81[", "INST", "]", "user",
                                       "\xe2\x96\x81user", "<|", "|>"};
  enum { kS = sizeof special / sizeof *special, kP = sizeof pieces / sizeof *pieces,
         kN = kS + 256 + kP };
  static char bytes[256][7];
  const char *texts[kN];
  uint32_t lens[kN];
  float scores[kN];
  int32_t types[kN];
  for (int i = 0; i < kS; ++i) {
    texts[i] = special[i];
    types[i] = i == 0 ? KILN_TOKEN_TYPE_UNKNOWN : KILN_TOKEN_TYPE_CONTROL;
  }
  for (int i = 0; i < 256; ++i) {
    static const char hex[] = "0123456789ABCDEF";
    memcpy(bytes[i], "<0x", 3);
    bytes[i][3] = hex[i >> 4], bytes[i][4] = hex[i & 15], bytes[i][5] = '>', bytes[i][6] = 0;
    texts[kS + i] = bytes[i];
    types[kS + i] = KILN_TOKEN_TYPE_BYTE;
  }
  for (int i = 0; i < kP; ++i) {
    texts[kS + 256 + i] = pieces[i];
    types[kS + 256 + i] = KILN_TOKEN_TYPE_NORMAL;
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

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  if (!(g_spm = make_spm()))
    abort(); /* the fixed vocabulary must be valid */
  return 0;
}

enum { kMaxMessages = 64 };

/* One encode into room for every case: BOS, then at most one token per byte and one "\xe2\x96\x81"
 * per fragment (a fragment is at least one byte). */
static void check_encode(const char *text, size_t len) {
  const size_t cap = 2 * len + 2;
  int32_t *ids = malloc(cap * sizeof *ids);
  size_t n = 0;
  if (!ids)
    abort();
  if (kiln_tokenizer_encode_ex(g_spm, text, len, KILN_ENCODE_SPECIAL | KILN_ENCODE_ADD_BOS, ids,
                               cap, &n) != KILN_STATUS_OK ||
      n == 0 || n > cap || ids[0] != 1)
    abort(); /* every byte has a token */
  for (size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || (uint32_t)ids[i] >= kiln_tokenizer_vocab_size(g_spm))
      abort();
  free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t sel = data[0];
  const char *rest = (const char *)data + 1;
  const size_t n_rest = size - 1;
  kiln_chat_template_t t = (kiln_chat_template_t)(sel % 5);
  if (sel & 0x10) {
    t = kiln_chat_template_detect(rest, n_rest);
    if ((unsigned)t >= KILN_CHAT_TEMPLATE_COUNT || !kiln_chat_template_name(t))
      abort();
  }
  /* Split the rest into NUL-terminated strings (a copy, terminated). */
  char *buf = malloc(n_rest + 1);
  if (!buf)
    abort();
  memcpy(buf, rest, n_rest);
  buf[n_rest] = '\0';
  kiln_chat_message_t m[kMaxMessages];
  size_t n = 0;
  for (char *p = buf; p < buf + n_rest && n < kMaxMessages;) {
    char *role = p;
    p += strlen(p) + 1;
    if (p > buf + n_rest)
      break;
    m[n].role = role;
    m[n++].content = p;
    p += strlen(p) + 1;
  }
  const int gen = (sel & 0x08) != 0;
  size_t len = 0;
  kiln_status_t st = kiln_chat_format(t, "<s>", "</s>", m, n, gen, NULL, 0, &len);
  if (t == KILN_CHAT_TEMPLATE_NONE) {
    if (st != KILN_STATUS_INVALID_ARGUMENT)
      abort();
  } else if (st == KILN_STATUS_INVALID_ARGUMENT) {
    if (t != KILN_CHAT_TEMPLATE_LLAMA2 && t != KILN_CHAT_TEMPLATE_ZEPHYR)
      abort(); /* only their role rules refuse */
  } else if (st == KILN_STATUS_OK || st == KILN_STATUS_BUFFER_TOO_SMALL) {
    char *full = malloc(len + 1), *cut = malloc(len + 1);
    size_t len2 = 0, len3 = 0;
    if (!full || !cut)
      abort();
    if (kiln_chat_format(t, "<s>", "</s>", m, n, gen, full, len, &len2) != KILN_STATUS_OK ||
        len2 != len)
      abort();
    if (len > 0 && (kiln_chat_format(t, "<s>", "</s>", m, n, gen, cut, len - 1, &len3) !=
                        KILN_STATUS_BUFFER_TOO_SMALL ||
                    len3 != len || memcmp(cut, full, len - 1) != 0))
      abort();
    check_encode(full, len);
    free(full);
    free(cut);
  } else {
    abort();
  }
  free(buf);
  return 0;
}
