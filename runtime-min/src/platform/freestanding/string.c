/* The C library's memory and string functions that clang emits calls to (struct copies,
 * zeroing, -ffreestanding still allows memcpy/memset/memmove/memcmp calls). Plain byte
 * loops with word fast paths: the hot loops of kiln live in the kernels, not here.
 * Compiled with -fno-builtin so the loops are not turned back into calls to themselves.
 * strerror is libc/errno.c's (it needs the errno values). */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  if ((((uintptr_t)d | (uintptr_t)s) & 7) == 0) {
    for (; n >= 8; n -= 8, d += 8, s += 8)
      *(uint64_t *)d = *(const uint64_t *)s;
  }
  while (n--)
    *d++ = *s++;
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  if (d == s || n == 0)
    return dst;
  if (d < s || d >= s + n) /* no overlap that a forward copy would clobber */
    return memcpy(dst, src, n);
  while (n--)
    d[n] = s[n];
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  uint8_t *d = dst;
  const uint8_t b = (uint8_t)c;
  if (((uintptr_t)d & 7) == 0) {
    const uint64_t w = 0x0101010101010101ull * b;
    for (; n >= 8; n -= 8, d += 8)
      *(uint64_t *)d = w;
  }
  while (n--)
    *d++ = b;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const uint8_t *p = a, *q = b;
  for (size_t i = 0; i < n; ++i)
    if (p[i] != q[i])
      return p[i] < q[i] ? -1 : 1;
  return 0;
}

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n])
    ++n;
  return n;
}

int strcmp(const char *a, const char *b) {
  while (*a && *a == *b)
    ++a, ++b;
  return (unsigned char)*a - (unsigned char)*b;
}

void *memchr(const void *s, int c, size_t n) {
  const uint8_t *p = s;
  for (size_t i = 0; i < n; ++i)
    if (p[i] == (uint8_t)c)
      return (void *)(p + i);
  return 0;
}

int strncmp(const char *a, const char *b, size_t n) {
  for (; n; --n, ++a, ++b)
    if (*a != *b || !*a)
      return (unsigned char)*a - (unsigned char)*b;
  return 0;
}

char *strchr(const char *s, int c) {
  for (;; ++s) {
    if (*s == (char)c)
      return (char *)s;
    if (!*s)
      return 0;
  }
}

char *strrchr(const char *s, int c) {
  const char *last = 0;
  for (;; ++s) {
    if (*s == (char)c)
      last = s;
    if (!*s)
      return (char *)last;
  }
}

char *strstr(const char *hay, const char *needle) {
  const size_t n = strlen(needle);
  for (; *hay; ++hay)
    if (strncmp(hay, needle, n) == 0)
      return (char *)hay;
  return n ? 0 : (char *)hay;
}

/* clang calls this for memcpy of 8-byte-aligned data whose size is a known multiple of 8
 * (at least 32): compiler-rt has an unrolled version, plain memcpy is just as correct.
 * Here rather than in hexagon_rt.c, which also goes into the kernel bitcode (no memcpy). */
void *__hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void *dst, const void *src,
                                                             size_t n) {
  return memcpy(dst, src, n);
}
