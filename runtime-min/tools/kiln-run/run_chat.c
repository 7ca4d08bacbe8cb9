/* kiln-run chat and generate --chat: the artifact's chat template (kiln/chat.h) around the
 * user's text, one reply per turn, stopped by EOS or end of turn.
 *
 * The KV cache is kept between turns: `fed` is the text whose tokens the session holds
 * (the formatted conversation up to the reply, the reply as generated and the token that
 * ended it). A new turn formats the whole conversation again and, where `fed` is a prefix
 * of it, evaluates only the rest; where the template rewrites what was fed (Llama 2 and
 * Llama 3 trim a reply's whitespace) it starts the session over with the whole text. A
 * conversation that no longer fits the context starts over from the newest message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln-run.h"

typedef struct {
  kiln_artifact_t *a;
  kiln_session_t *s;
  kiln_artifact_info_t info;
  kiln_chat_message_t *msgs;
  size_t n_msgs, cap_msgs;
  char *fed;            /* text whose tokens the session holds */
  size_t fed_len;
  int quiet;            /* no stats line per turn */
} chat_t;

static int add_message(chat_t *c, const char *role, const char *text, size_t len) {
  if (c->n_msgs == c->cap_msgs) {
    size_t cap = c->cap_msgs ? 2 * c->cap_msgs : 8;
    kiln_chat_message_t *m = realloc(c->msgs, cap * sizeof *m);
    if (!m)
      return run_fail("out of memory for %zu messages", cap);
    c->msgs = m;
    c->cap_msgs = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy)
    return run_fail("out of memory for a message of %zu bytes", len);
  memcpy(copy, text, len);
  copy[len] = '\0';
  c->msgs[c->n_msgs].role = role;
  c->msgs[c->n_msgs++].content = copy;
  return 0;
}

static void drop_messages(chat_t *c, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    free((char *)c->msgs[i].content);
  memmove(c->msgs + from, c->msgs + to, (c->n_msgs - to) * sizeof *c->msgs);
  c->n_msgs -= to - from;
}

/* The whole conversation formatted with the assistant header at its end (malloc'ed). */
static int format_all(chat_t *c, char **out, size_t *out_len) {
  kiln_error_t err;
  size_t len = 0;
  kiln_status_t st = kiln_artifact_chat_format(c->a, c->msgs, c->n_msgs, 1, NULL, 0, &len, &err);
  if (st != KILN_STATUS_OK && st != KILN_STATUS_BUFFER_TOO_SMALL)
    return run_fail("%s", err.message);
  char *text = malloc(len + 1);
  if (!text)
    return run_fail("out of memory for %zu bytes of chat", len);
  if (kiln_artifact_chat_format(c->a, c->msgs, c->n_msgs, 1, text, len, &len, &err) !=
      KILN_STATUS_OK) {
    free(text);
    return run_fail("%s", err.message);
  }
  text[len] = '\0';
  *out = text;
  *out_len = len;
  return 0;
}

static int append_fed(chat_t *c, const char *p, size_t n) {
  char *f = realloc(c->fed, c->fed_len + n + 1);
  if (!f)
    return run_fail("out of memory for the conversation");
  memcpy(f + c->fed_len, p, n);
  c->fed = f;
  c->fed_len += n;
  c->fed[c->fed_len] = '\0';
  return 0;
}

/* Tokens of text (control tokens' texts become their ids); BOS first when `start`. */
static int tokenize(chat_t *c, const char *text, size_t len, int start, int32_t **ids,
                    size_t *n) {
  kiln_error_t err;
  const unsigned flags =
      KILN_ENCODE_SPECIAL | (start && c->info.add_bos ? KILN_ENCODE_ADD_BOS : 0u);
  kiln_status_t st = kiln_artifact_tokenize_ex(c->a, text, len, flags, NULL, 0, n, &err);
  if (st != KILN_STATUS_OK && st != KILN_STATUS_BUFFER_TOO_SMALL)
    return run_fail("%s", err.message);
  *ids = malloc((*n ? *n : 1) * sizeof **ids);
  if (!*ids)
    return run_fail("out of memory for %zu tokens", *n);
  if (kiln_artifact_tokenize_ex(c->a, text, len, flags, *ids, *n, n, &err) != KILN_STATUS_OK) {
    free(*ids);
    return run_fail("%s", err.message);
  }
  return 0;
}

/* Evaluates the new part of the formatted conversation (all of it when the session holds
 * something else), leaving the session at the start of the reply. */
static int feed_turn(chat_t *c, uint32_t n_predict) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    char *text = NULL;
    size_t len = 0;
    if (format_all(c, &text, &len))
      return 1;
    const int resume = c->fed_len && c->fed_len <= len && !memcmp(text, c->fed, c->fed_len);
    const size_t from = resume ? c->fed_len : 0;
    int32_t *ids = NULL;
    size_t n;
    if (tokenize(c, text + from, len - from, !resume, &ids, &n)) {
      free(text);
      return 1;
    }
    /* Every token of the reply is evaluated, the last one and the end of turn included
     * (the next turn continues after them). */
    const uint32_t past = resume ? kiln_session_n_past(c->s) : 0;
    const uint64_t need = (uint64_t)past + n + n_predict;
    if (need > c->info.max_ctx || n == 0) {
      free(ids);
      free(text);
      const size_t first = c->n_msgs && !strcmp(c->msgs[0].role, "system") ? 1 : 0;
      if (attempt == 0 && c->n_msgs - first > 1) {
        fprintf(stderr, "kiln-run: the conversation fills the context of %u positions; "
                        "starting over from the last message\n", c->info.max_ctx);
        drop_messages(c, first, c->n_msgs - 1);
        c->fed_len = 0;
        continue;
      }
      return run_fail("the message (%zu tokens) and %u to generate do not fit the context of "
                      "%u positions (compile with a larger --ctx, or lower -n)", n, n_predict,
                      c->info.max_ctx);
    }
    kiln_error_t err;
    if (!resume) {
      kiln_session_reset(c->s);
      c->fed_len = 0;
    }
    int rc = kiln_session_prefill(c->s, ids, n, &err) != KILN_STATUS_OK
                 ? run_fail("%s", err.message)
                 : append_fed(c, text + from, len - from);
    free(ids);
    free(text);
    return rc;
  }
  return 1;
}

/* Samples and streams one reply; appends it to the conversation. */
static int reply(chat_t *c, uint32_t n_predict) {
  char *out = NULL;
  size_t out_len = 0;
  int rc = 0;
  kiln_error_t err;
  for (uint32_t generated = 0; generated < n_predict;) {
    int32_t next;
    if (kiln_session_sample(c->s, &next, &err) != KILN_STATUS_OK) {
      rc = run_fail("%s", err.message);
      break;
    }
    const int stop = next == c->info.eos_id || next == c->info.eot_id;
    char piece[256];
    size_t len = 0;
    if (!stop && kiln_artifact_detokenize(c->a, next, piece, sizeof piece, &len, &err) !=
                     KILN_STATUS_OK) {
      rc = run_fail("%s", err.message);
      break;
    }
    /* The token that ends the reply is evaluated too, so the session holds the text the
     * template writes after a reply. */
    if (kiln_session_decode(c->s, next, &err) != KILN_STATUS_OK) {
      rc = run_fail("%s", err.message);
      break;
    }
    if (stop) { /* its text as the template writes it after a reply: "<|eot_id|>", "</s>" */
      size_t tlen = 0;
      const char *tt = kiln_artifact_token_text(c->a, next, &tlen);
      rc = append_fed(c, tt ? tt : "", tt ? tlen : 0);
      break;
    }
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    char *grown = realloc(out, out_len + len + 1);
    if (!grown) {
      rc = run_fail("out of memory for the reply");
      break;
    }
    out = grown;
    memcpy(out + out_len, piece, len);
    out_len += len;
    if (append_fed(c, piece, len)) {
      rc = 1;
      break;
    }
    ++generated;
  }
  fputs("\n", stdout);
  fflush(stdout);
  if (!rc)
    rc = add_message(c, "assistant", out ? out : "", out_len);
  free(out);
  return rc;
}

static int chat_open(const run_options_t *o, chat_t *c) {
  memset(c, 0, sizeof *c);
  if (run_open(o, &c->a, &c->s))
    return 1;
  kiln_artifact_info(c->a, &c->info);
  if (c->info.chat_template == KILN_CHAT_TEMPLATE_NONE) {
    run_close(c->a, c->s);
    return run_fail("%s has no chat template: compile it with --chat-template NAME "
                    "(llama3, llama2, zephyr, chatml)", o->artifact);
  }
  if (o->system && add_message(c, "system", o->system, strlen(o->system))) {
    run_close(c->a, c->s);
    return 1;
  }
  return 0;
}

static void chat_close(chat_t *c) {
  drop_messages(c, 0, c->n_msgs);
  free(c->msgs);
  free(c->fed);
  run_close(c->a, c->s);
}

static int turn(chat_t *c, const char *text, size_t len, uint32_t n_predict) {
  if (add_message(c, "user", text, len) || feed_turn(c, n_predict))
    return 1;
  return reply(c, n_predict);
}

static void print_stats(const chat_t *c) {
  kiln_session_stats_t st;
  kiln_session_stats(c->s, &st);
  fprintf(stderr,
          "TTFT: %.2f ms; prefill: %llu tokens, %.1f tok/s; decode: %llu tokens, %.1f tok/s "
          "(%u threads); context %u/%u\n",
          st.ttft_s * 1e3, (unsigned long long)st.prefill_tokens, st.prefill_tok_s,
          (unsigned long long)st.decode_tokens, st.decode_tok_s, st.n_threads,
          kiln_session_n_past(c->s), c->info.max_ctx);
}

int run_generate_chat(const run_options_t *o) {
  chat_t c;
  if (chat_open(o, &c))
    return 1;
  int rc = turn(&c, o->prompt, strlen(o->prompt), o->n_predict);
  if (!rc)
    print_stats(&c);
  chat_close(&c);
  return rc;
}

/* One line of stdin without its end of line (malloc'ed, grown as needed); 0 at the end of
 * input with nothing read. getc only: the freestanding libc has no getline. */
static int read_line(char **line, size_t *cap, size_t *len) {
  int ch;
  *len = 0;
  while ((ch = getc(stdin)) != EOF && ch != '\n') {
    if (*len + 2 > *cap) {
      size_t n = *cap ? 2 * *cap : 256;
      char *p = realloc(*line, n);
      if (!p)
        return run_fail("out of memory for a line of %zu bytes", *len), -1;
      *line = p;
      *cap = n;
    }
    (*line)[(*len)++] = (char)ch;
  }
  if (ch == EOF && *len == 0)
    return 0;
  if (!*line && !(*line = malloc(*cap = 1)))
    return -1;
  (*line)[*len] = '\0';
  return 1;
}

int run_chat(const run_options_t *o) {
  chat_t c;
  if (chat_open(o, &c))
    return 1;
  fprintf(stderr, "kiln-run chat: %s template; a line is a message, /reset starts over, "
                  "/exit or end of input ends\n",
          kiln_chat_template_name((kiln_chat_template_t)c.info.chat_template));
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  for (;;) {
    fputs("> ", stdout);
    fflush(stdout);
    size_t n;
    const int got = read_line(&line, &cap, &n);
    if (got <= 0) {
      fputs("\n", stdout);
      rc = got < 0;
      break;
    }
    while (n > 0 && line[n - 1] == '\r')
      line[--n] = '\0';
    if (n == 0)
      continue;
    if (!strcmp(line, "/exit") || !strcmp(line, "/quit"))
      break;
    if (!strcmp(line, "/reset")) {
      const size_t first = c.n_msgs && !strcmp(c.msgs[0].role, "system") ? 1 : 0;
      drop_messages(&c, first, c.n_msgs);
      c.fed_len = 0;
      kiln_session_reset(c.s);
      continue;
    }
    if ((rc = turn(&c, line, n, o->n_predict)) != 0)
      break;
    print_stats(&c);
  }
  free(line);
  chat_close(&c);
  return rc;
}
