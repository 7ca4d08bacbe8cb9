/* Tokenizes text files with an artifact's tokenizer and decodes the ids back, then does the
 * same for as many random bytes (invalid UTF-8 included); every round trip must give the
 * input back. Built with ASan/UBSan over runtime-min's sources (kiln-tokenize-roundtrip-asan)
 * for tests/e2e/llamacpp_tokenizer.py.  Usage: tokenize_roundtrip A.kiln TEXT... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

/* Encodes then decodes buf[0..n); 0 when the bytes come back. */
static int round_trip(const kiln_artifact_t *a, const char *what, const char *buf, size_t n) {
  kiln_error_t err;
  int32_t *ids = malloc((n + 1) * sizeof *ids);
  char *back = malloc(n + 1);
  size_t m = 0, o = 0;
  int rc = !ids || !back ||
           kiln_artifact_tokenize(a, buf, n, 0, ids, n + 1, &m, &err) != KILN_STATUS_OK;
  for (size_t i = 0; !rc && i < m; ++i) {
    char piece[256];
    size_t len = 0;
    rc = kiln_artifact_detokenize(a, ids[i], piece, sizeof piece, &len, &err) != KILN_STATUS_OK ||
         len > n - o;
    if (!rc)
      memcpy(back + o, piece, len), o += len;
  }
  rc = rc || o != n || memcmp(back, buf, n) != 0;
  printf("%s: %zu bytes, %zu ids, round trip %s\n", what, n, m, rc ? "DIFFERS" : "exact");
  free(ids);
  free(back);
  return rc;
}

int main(int argc, char **argv) {
  kiln_error_t err;
  kiln_artifact_t *a = NULL;
  if (argc < 3 || kiln_artifact_open(argv[1], NULL, &a, &err) != KILN_STATUS_OK) {
    fprintf(stderr, "usage: %s A.kiln TEXT... (%s)\n", argv[0], argc < 3 ? "" : err.message);
    return 2;
  }
  int rc = 0;
  unsigned seed = 7;
  for (int k = 2; k < argc; ++k) {
    FILE *f = fopen(argv[k], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
      fprintf(stderr, "cannot read %s\n", argv[k]);
      return 2;
    }
    const size_t n = (size_t)ftell(f);
    char *text = malloc(n + 1);
    rewind(f);
    if (!text || fread(text, 1, n, f) != n) {
      fprintf(stderr, "cannot read %s\n", argv[k]);
      return 2;
    }
    fclose(f);
    rc |= round_trip(a, argv[k], text, n);
    for (size_t i = 0; i < n; ++i) /* a small LCG: the same bytes on every run */
      text[i] = (char)((seed = seed * 1103515245u + 12345u) >> 16);
    rc |= round_trip(a, "  random bytes", text, n);
    free(text);
  }
  kiln_artifact_close(a);
  return rc;
}
