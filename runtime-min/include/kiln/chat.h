/* kiln runtime-min: chat templates. A model's tokenizer.chat_template is a Jinja program;
 * runtime-min has no Jinja. It renders the template families Llama-family models ship, each
 * exactly as its Jinja text renders (checked against Hugging Face's own Jinja in
 * tests/e2e/chat_templates.py), and the compiler records which family an artifact's
 * template is:
 *   llama3  Meta Llama 3.x: <|start_header_id|>role<|end_header_id|>\n\n trim(content) <|eot_id|>
 *   llama2  Meta Llama-2-chat: [INST] (<<SYS>> in the first turn) ... [/INST] reply </s>
 *   zephyr  Zephyr / TinyLlama: <|role|>\n content </s>\n
 *   chatml  <|im_start|>role\n content <|im_end|>\n
 * The BOS a template writes at the very start is left out: the tokenizer adds it (add_bos),
 * as llama.cpp does. BOS and EOS inside the text (Llama 2's later turns, Zephyr's ends) are
 * written as the tokenizer's texts for them; encode with KILN_ENCODE_SPECIAL so they become
 * their ids. "trim" and "strip" remove ASCII whitespace (llama.cpp's isspace).
 * Nothing here allocates.
 */
#ifndef KILN_CHAT_H_
#define KILN_CHAT_H_

#include <stddef.h>

#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_chat_template_e {
  KILN_CHAT_TEMPLATE_NONE = 0, /* no template: the model is not chatted with */
  KILN_CHAT_TEMPLATE_LLAMA3 = 1,
  KILN_CHAT_TEMPLATE_LLAMA2 = 2,
  KILN_CHAT_TEMPLATE_ZEPHYR = 3,
  KILN_CHAT_TEMPLATE_CHATML = 4,
} kiln_chat_template_t;
#define KILN_CHAT_TEMPLATE_COUNT 5

typedef struct kiln_chat_message_s {
  const char *role;    /* NUL-terminated: "system", "user", "assistant", ... */
  const char *content; /* NUL-terminated UTF-8 */
} kiln_chat_message_t;

/* "none", "llama3", "llama2", "zephyr", "chatml"; NULL outside the enum. */
const char *kiln_chat_template_name(kiln_chat_template_t t);
/* The inverse of _name; KILN_STATUS_UNSUPPORTED for any other text (or NULL). */
kiln_status_t kiln_chat_template_from_name(const char *name, kiln_chat_template_t *out);

/* Which family a Jinja template text is (a bare family name counts, as in llama.cpp), from
 * the markers each family's templates contain; KILN_CHAT_TEMPLATE_NONE when it is none of
 * them (Mistral's and Phi-3's [INST] / <|user|> variants are none of them). */
kiln_chat_template_t kiln_chat_template_detect(const char *jinja, size_t len);

/* Renders messages[0..n) and, with add_generation_prompt, the assistant header that
 * starts a reply (Llama 2's template has none: its "[/INST]" is the prompt). Writes at most
 * cap bytes plus no terminator; *out_len receives the full length, and
 * KILN_STATUS_BUFFER_TOO_SMALL is returned if that exceeds cap. bos_text / eos_text are
 * the tokenizer's texts of BOS and EOS ("<s>", "</s>"); NULL counts as "".
 * KILN_STATUS_INVALID_ARGUMENT for NULL messages with n > 0, a message with a NULL role or
 * content, KILN_CHAT_TEMPLATE_NONE or an unknown template, and what the template itself
 * refuses: Llama 2's roles must be an optional system first, then user and assistant
 * taking turns; Zephyr's are system, user and assistant. */
kiln_status_t kiln_chat_format(kiln_chat_template_t t, const char *bos_text,
                               const char *eos_text, const kiln_chat_message_t *messages,
                               size_t n, int add_generation_prompt, char *out, size_t cap,
                               size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* KILN_CHAT_H_ */
