/* libFuzzer: runtime-min's artifact loader on arbitrary bytes - every check of
 * kiln_artifact_open short of loading the code section (kiln_loader_verify), then the
 * artifact's tokenizer on a fixed text; bytes that are a module (kiln/module.h) go through
 * kiln_module_open's checks instead. The first byte picks the mode: odd, with an app
 * public key (the signature step must refuse everything the fuzzer makes); even, without.
 * Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, so checksums do not stop mutations. */
#include <stdlib.h>
#include <string.h>

#include "../../runtime-min/src/loader/artifact_internal.h"
#include "../../runtime-min/src/module/module_internal.h"
#include "../../runtime-min/src/platform/error.h"
#include "kiln/tokenizer.h"

static const uint8_t kKey[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t *key = (data[0] & 1) ? kKey : NULL;
  /* The loader expects a page-aligned mapping; give it an aligned copy. */
  const size_t n = size - 1;
  uint8_t *copy = aligned_alloc(4096, (n + 4095) / 4096 * 4096 + 4096);
  memcpy(copy, data + 1, n);
  kiln_artifact_t a;
  memset(&a, 0, sizeof a);
  kiln_error_t err;
  kiln_allocator_resolve(NULL, &a.alloc, &err);
  a.map.data = copy;
  a.map.size = n;
  const kiln_status_t st = kiln_loader_verify(&a, key, &err);
  if (st == KILN_STATUS_INVALID_ARGUMENT && kiln_module_verify_bytes(copy, n, key, &err) ==
                                                KILN_STATUS_OK && key)
    abort(); /* a fuzzer-made module passed a signature check */
  if (st == KILN_STATUS_OK) {
    if (key)
      abort(); /* a fuzzer-made file passed a signature check */
    if (a.tokenizer) {
      static const char kText[] = "Once upon a time, \xc3\xa9t\xc3\xa9 <s> 123!";
      int32_t ids[256];
      size_t m = 0;
      if (kiln_tokenizer_encode(a.tokenizer, kText, sizeof kText - 1, 1, ids, 256, &m) ==
          KILN_STATUS_OK)
        for (size_t i = 0; i < m; ++i) {
          char piece[512];
          size_t len;
          kiln_tokenizer_piece(a.tokenizer, ids[i], piece, sizeof piece, &len);
        }
    }
  }
  kiln_tokenizer_destroy(a.tokenizer);
  free(copy);
  return 0;
}
