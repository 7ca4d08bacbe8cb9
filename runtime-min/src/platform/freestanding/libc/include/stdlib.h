/* kiln freestanding libc: <stdlib.h>. The allocator is the freestanding layer's
 * (alloc.c); exit flushes stdio before the exit_group syscall. */
#ifndef KILN_LIBC_STDLIB_H_
#define KILN_LIBC_STDLIB_H_

#include <stddef.h>

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 0x7fffffff

void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);
void free(void *p);
void *aligned_alloc(size_t align, size_t size);
/* POSIX, declared unconditionally: the runtime uses it for aligned buffers */
int posix_memalign(void **out, size_t align, size_t size);

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

long strtol(const char *restrict s, char **restrict end, int base);
unsigned long strtoul(const char *restrict s, char **restrict end, int base);
long long strtoll(const char *restrict s, char **restrict end, int base);
unsigned long long strtoull(const char *restrict s, char **restrict end, int base);
double strtod(const char *restrict s, char **restrict end);
int atoi(const char *s);

char *getenv(const char *name);

_Noreturn void exit(int code);
_Noreturn void abort(void);
int atexit(void (*fn)(void));

int abs(int v);
long labs(long v);
long long llabs(long long v);

#endif
