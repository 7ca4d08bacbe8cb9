/* kiln freestanding libc: <string.h>. memory and string functions live in ../../string.c (compilers emit
 * calls to them even without this library); strerror maps the errno.h values. */
#ifndef KILN_LIBC_STRING_H_
#define KILN_LIBC_STRING_H_

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *hay, const char *needle);
char *strerror(int errnum);

#endif
