/* Chat templates rendered without Jinja (kiln/chat.h): one writer per family, each what the
 * family's Jinja text renders. Detection follows llama.cpp's markers (llm_chat_detect_template)
 * for the families kiln renders; where llama.cpp's own renderer departs from the template
 * (it takes TinyLlama's Zephyr template for Falcon 3 and drops the </s>; its Llama 2 puts
 * no spaces around a reply), kiln follows the template. */
#include <string.h>

#include "kiln/chat.h"

static const char *const kNames[KILN_CHAT_TEMPLATE_COUNT] = {"none", "llama3", "llama2",
                                                             "zephyr", "chatml"};

const char *kiln_chat_template_name(kiln_chat_template_t t) {
  return (unsigned)t < KILN_CHAT_TEMPLATE_COUNT ? kNames[t] : NULL;
}

kiln_status_t kiln_chat_template_from_name(const char *name, kiln_chat_template_t *out) {
  for (unsigned i = 0; name && out && i < KILN_CHAT_TEMPLATE_COUNT; ++i)
    if (strcmp(name, kNames[i]) == 0) {
      *out = (kiln_chat_template_t)i;
      return KILN_STATUS_OK;
    }
  return KILN_STATUS_UNSUPPORTED;
}

static int contains(const char *h, size_t hn, const char *needle) {
  const size_t nn = strlen(needle);
  for (size_t i = 0; nn <= hn && i <= hn - nn; ++i)
    if (h[i] == needle[0] && memcmp(h + i, needle, nn) == 0)
      return 1;
  return 0;
}

kiln_chat_template_t kiln_chat_template_detect(const char *j, size_t n) {
  if (!j)
    return KILN_CHAT_TEMPLATE_NONE;
  for (unsigned i = 1; i < KILN_CHAT_TEMPLATE_COUNT; ++i)
    if (strlen(kNames[i]) == n && memcmp(j, kNames[i], n) == 0)
      return (kiln_chat_template_t)i;
  if (contains(j, n, "<|im_start|>")) /* Phi-4 and SmolVLM use it differently */
    return contains(j, n, "<|im_sep|>") || contains(j, n, "<end_of_utterance>")
               ? KILN_CHAT_TEMPLATE_NONE
               : KILN_CHAT_TEMPLATE_CHATML;
  if (contains(j, n, "[INST]")) {
    /* Meta's Llama-2-chat template: system in <<SYS>>, BOS before every [INST], content
     * stripped. Mistral's and the other [INST] variants render differently. */
    return contains(j, n, "<<SYS>>") && contains(j, n, "bos_token + '[INST] '") &&
                   contains(j, n, "content.strip()") && !contains(j, n, "[SYSTEM_PROMPT]") &&
                   !contains(j, n, "[AVAILABLE_TOOLS]")
               ? KILN_CHAT_TEMPLATE_LLAMA2
               : KILN_CHAT_TEMPLATE_NONE;
  }
  if (contains(j, n, "<|user|>") && contains(j, n, "<|assistant|>"))
    return contains(j, n, "<|end|>") ? KILN_CHAT_TEMPLATE_NONE /* Phi-3 */
           : contains(j, n, "eos_token") || contains(j, n, "</s>") ||
                   contains(j, n, "<|endoftext|>")
               ? KILN_CHAT_TEMPLATE_ZEPHYR
               : KILN_CHAT_TEMPLATE_NONE;
  if (contains(j, n, "<|start_header_id|>") && contains(j, n, "<|end_header_id|>"))
    return KILN_CHAT_TEMPLATE_LLAMA3;
  return KILN_CHAT_TEMPLATE_NONE;
}

/* ---- rendering ------------------------------------------------------------------------ */

typedef struct {
  char *out;
  size_t cap, len;
} sink_t;

static void put_n(sink_t *s, const char *p, size_t n) {
  if (s->len < s->cap && n)
    memcpy(s->out + s->len, p, s->cap - s->len < n ? s->cap - s->len : n);
  s->len += n;
}

static void put(sink_t *s, const char *p) { put_n(s, p, p ? strlen(p) : 0); }

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Jinja's `| trim` and Python's strip() on ASCII whitespace. */
static void put_trimmed(sink_t *s, const char *p, size_t n) {
  while (n && is_space(*p))
    ++p, --n;
  while (n && is_space(p[n - 1]))
    --n;
  put_n(s, p, n);
}

static int role_is(const kiln_chat_message_t *m, const char *role) {
  return strcmp(m->role, role) == 0;
}

/* Right-trimmed length of p. */
static size_t rtrim_len(const char *p) {
  size_t n = strlen(p);
  while (n && is_space(p[n - 1]))
    --n;
  return n;
}

static kiln_status_t llama2(sink_t *s, const char *bos, const char *eos,
                            const kiln_chat_message_t *m, size_t n) {
  size_t first = 0;
  const char *system = NULL;
  if (n && role_is(&m[0], "system"))
    system = m[0].content, first = 1;
  for (size_t i = first; i < n; ++i) {
    const int user = (i - first) % 2 == 0;
    if (!role_is(&m[i], user ? "user" : "assistant"))
      return KILN_STATUS_INVALID_ARGUMENT; /* "Conversation roles must alternate" */
    if (!user) {
      put(s, " ");
      put_trimmed(s, m[i].content, strlen(m[i].content));
      put(s, " ");
      put(s, eos);
      continue;
    }
    if (i > first) /* the first BOS is the tokenizer's */
      put(s, bos);
    put(s, "[INST] ");
    if (i == first && system) {
      /* strip() runs over "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + user: nothing leads
       * with whitespace, and an all-space user text lets it take the "\n\n" too. */
      const size_t k = rtrim_len(m[i].content);
      put(s, "<<SYS>>\n");
      put(s, system);
      put(s, k ? "\n<</SYS>>\n\n" : "\n<</SYS>>");
      put_n(s, m[i].content, k);
    } else {
      put_trimmed(s, m[i].content, strlen(m[i].content));
    }
    put(s, " [/INST]");
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_chat_format(kiln_chat_template_t t, const char *bos, const char *eos,
                               const kiln_chat_message_t *m, size_t n, int add_gen, char *out,
                               size_t cap, size_t *out_len) {
  if (!out_len || (!m && n) || (!out && cap) || t == KILN_CHAT_TEMPLATE_NONE ||
      (unsigned)t >= KILN_CHAT_TEMPLATE_COUNT)
    return KILN_STATUS_INVALID_ARGUMENT;
  *out_len = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!m[i].role || !m[i].content)
      return KILN_STATUS_INVALID_ARGUMENT;
    if (t == KILN_CHAT_TEMPLATE_ZEPHYR && !role_is(&m[i], "system") &&
        !role_is(&m[i], "user") && !role_is(&m[i], "assistant"))
      return KILN_STATUS_INVALID_ARGUMENT;
  }
  sink_t s = {out, cap, 0};
  if (t == KILN_CHAT_TEMPLATE_LLAMA2) {
    kiln_status_t st = llama2(&s, bos, eos, m, n);
    if (st != KILN_STATUS_OK)
      return st;
  }
  for (size_t i = 0; t != KILN_CHAT_TEMPLATE_LLAMA2 && i < n; ++i) {
    const char *c = m[i].content;
    switch (t) {
    case KILN_CHAT_TEMPLATE_LLAMA3:
      put(&s, "<|start_header_id|>");
      put(&s, m[i].role);
      put(&s, "<|end_header_id|>\n\n");
      put_trimmed(&s, c, strlen(c));
      put(&s, "<|eot_id|>");
      break;
    case KILN_CHAT_TEMPLATE_ZEPHYR:
      put(&s, "<|");
      put(&s, m[i].role);
      put(&s, "|>\n");
      put(&s, c);
      put(&s, eos);
      put(&s, "\n");
      break;
    default: /* KILN_CHAT_TEMPLATE_CHATML */
      put(&s, "<|im_start|>");
      put(&s, m[i].role);
      put(&s, "\n");
      put(&s, c);
      put(&s, "<|im_end|>\n");
      break;
    }
  }
  if (add_gen) {
    if (t == KILN_CHAT_TEMPLATE_LLAMA3)
      put(&s, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    else if (t == KILN_CHAT_TEMPLATE_ZEPHYR && n) /* written inside its message loop */
      put(&s, "<|assistant|>\n");
    else if (t == KILN_CHAT_TEMPLATE_CHATML)
      put(&s, "<|im_start|>assistant\n");
  }
  *out_len = s.len;
  return s.len > cap ? KILN_STATUS_BUFFER_TOO_SMALL : KILN_STATUS_OK;
}
