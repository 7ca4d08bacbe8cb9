/* The three helpers of libsodium's sodium/utils.c that its Ed25519 files call. utils.c
 * itself is not compiled: it also holds guarded-heap allocation, which needs libsodium's
 * random number generator and the rest of the library. Same contracts as libsodium's:
 * zeroing the compiler may not elide, and comparisons whose time does not depend on the
 * bytes. Renamed to ksodium_* by sodium_names.h like the files that call them. */
#include <stddef.h>

#include "utils.h" /* libsodium's prototypes, to check these against */

void sodium_memzero(void *const pnt, const size_t len) {
  volatile unsigned char *p = (volatile unsigned char *)pnt;
  for (size_t i = 0; i < len; ++i)
    p[i] = 0;
}

/* 0 when equal, -1 otherwise. */
int sodium_memcmp(const void *const b1, const void *const b2, size_t len) {
  const volatile unsigned char *a = (const volatile unsigned char *)b1;
  const volatile unsigned char *b = (const volatile unsigned char *)b2;
  unsigned int d = 0;
  for (size_t i = 0; i < len; ++i)
    d |= a[i] ^ b[i];
  return (int)((1u & ((d - 1u) >> 8)) - 1u);
}

/* 1 when all n bytes are zero, 0 otherwise. */
int sodium_is_zero(const unsigned char *n, const size_t nlen) {
  volatile unsigned char d = 0;
  for (size_t i = 0; i < nlen; ++i)
    d |= n[i];
  return 1 & ((d - 1) >> 8);
}
