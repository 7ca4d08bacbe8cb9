/* The smallest complete kiln app: open an artifact, generate greedily, print the text.
 * Build: cc embed_example.c -Iruntime-min/include libkiln_runtime.a -lpthread -ldl -lm */
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.kiln [PROMPT]\n", argv[0]);
    return 2;
  }
  const char *prompt = argc > 2 ? argv[2] : "Once upon a time";
  kiln_error_t err;
  kiln_artifact_t *model = NULL;
  kiln_session_t *session = NULL;
  kiln_artifact_info_t info;
  int32_t ids[256];
  size_t n_ids = 0;

  if (kiln_artifact_open(argv[1], NULL, &model, &err) != KILN_STATUS_OK ||
      kiln_session_create(model, NULL, &session, &err) != KILN_STATUS_OK ||
      kiln_artifact_tokenize(model, prompt, strlen(prompt), 1, ids, 256, &n_ids, &err) ||
      kiln_session_prefill(session, ids, n_ids, &err) != KILN_STATUS_OK)
    goto fail;
  kiln_artifact_info(model, &info);

  fputs(prompt, stdout);
  for (int i = 0; i < 16; ++i) {
    int32_t next;
    char piece[64];
    size_t len;
    if (kiln_session_sample(session, &next, &err) != KILN_STATUS_OK)
      goto fail;
    if (next == info.eos_id || next == info.eot_id)
      break;
    if (kiln_artifact_detokenize(model, next, piece, sizeof piece, &len, &err) ||
        kiln_session_decode(session, next, &err))
      goto fail;
    fwrite(piece, 1, len, stdout);
  }
  fputs("\n", stdout);
  kiln_session_destroy(session);
  kiln_artifact_close(model);
  return 0;

fail:
  fprintf(stderr, "error: %s\n", err.message);
  kiln_session_destroy(session);
  kiln_artifact_close(model);
  return 1;
}
