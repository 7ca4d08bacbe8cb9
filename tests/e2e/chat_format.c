/* runtime-min's chat templates from the command line, for tests/e2e/chat_templates.py:
 *   kiln-chat-format detect FILE          prints the family FILE's Jinja text is
 *   kiln-chat-format render NAME BOS EOS GEN [ROLE CONTENT]...
 *                                         writes the rendered text (GEN 0/1) to stdout
 * A refusal prints "refused: <status>" to stderr and exits 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/chat.h"

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "detect")) {
    FILE *f = fopen(argv[2], "rb");
    static char text[1 << 20];
    size_t n = f ? fread(text, 1, sizeof text, f) : 0;
    if (!f)
      return fprintf(stderr, "cannot read %s\n", argv[2]), 2;
    fclose(f);
    puts(kiln_chat_template_name(kiln_chat_template_detect(text, n)));
    return 0;
  }
  if (argc < 6 || strcmp(argv[1], "render") || (argc - 6) % 2)
    return fprintf(stderr, "usage: kiln-chat-format detect FILE | render NAME BOS EOS GEN "
                           "[ROLE CONTENT]...\n"), 2;
  kiln_chat_template_t t;
  if (kiln_chat_template_from_name(argv[2], &t) != KILN_STATUS_OK)
    return fprintf(stderr, "unknown template %s\n", argv[2]), 2;
  size_t n = (size_t)(argc - 6) / 2, len = 0;
  kiln_chat_message_t *m = calloc(n ? n : 1, sizeof *m);
  for (size_t i = 0; i < n; ++i)
    m[i].role = argv[6 + 2 * i], m[i].content = argv[7 + 2 * i];
  kiln_status_t st = kiln_chat_format(t, argv[3], argv[4], m, n, atoi(argv[5]), NULL, 0, &len);
  char *out = malloc(len + 1);
  if (st == KILN_STATUS_BUFFER_TOO_SMALL || st == KILN_STATUS_OK)
    st = kiln_chat_format(t, argv[3], argv[4], m, n, atoi(argv[5]), out, len, &len);
  if (st != KILN_STATUS_OK)
    return fprintf(stderr, "refused: %s\n", kiln_status_message(st)), 3;
  fwrite(out, 1, len, stdout);
  free(out);
  free(m);
  return 0;
}
