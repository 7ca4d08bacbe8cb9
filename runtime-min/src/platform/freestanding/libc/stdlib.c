/* <stdlib.h> on the freestanding layer: the allocator (alloc.c) under the C names,
 * qsort, the strto* integer parsers, getenv, exit/abort, and the weak kiln_fs_main that
 * lets a program define an ordinary main. strtod is strtod.c's. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h" /* kiln_fs_syscall */
#include "libc_internal.h"

void *malloc(size_t size) { return kiln_fs_malloc(size); }
void *calloc(size_t n, size_t size) { return kiln_fs_calloc(n, size); }
void free(void *p) { kiln_fs_free(p); }

void *aligned_alloc(size_t align, size_t size) {
  if (!align || (align & (align - 1)) || align > 4096) {
    errno = EINVAL;
    return 0;
  }
  void *p = kiln_fs_aligned_alloc(align, size);
  if (!p)
    errno = ENOMEM;
  return p;
}

int posix_memalign(void **out, size_t align, size_t size) {
  if (!align || (align & (align - 1)) || align % sizeof(void *) || align > 4096)
    return EINVAL;
  void *p = kiln_fs_aligned_alloc(align, size);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

void *realloc(void *p, size_t size) {
  if (!p)
    return malloc(size);
  const size_t have = kiln_fs_usable_size(p);
  if (size <= have) /* shrinking or within the block's class: keep it */
    return p;
  void *q = malloc(size);
  if (!q) {
    errno = ENOMEM;
    return 0;
  }
  memcpy(q, p, have);
  free(p);
  return q;
}

/* ---- qsort: heapsort, O(n log n) worst case and no recursion ---- */

static void swap_bytes(char *a, char *b, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    const char t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
}

static void sift_down(char *base, size_t root, size_t n, size_t size,
                      int (*cmp)(const void *, const void *)) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n)
      return;
    if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size) < 0)
      ++child;
    if (cmp(base + root * size, base + child * size) >= 0)
      return;
    swap_bytes(base + root * size, base + child * size, size);
    root = child;
  }
}

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  char *b = base;
  if (n < 2 || !size)
    return;
  for (size_t i = n / 2; i-- > 0;)
    sift_down(b, i, n, size, cmp);
  for (size_t end = n - 1; end > 0; --end) {
    swap_bytes(b, b + end * size, size);
    sift_down(b, 0, end, size, cmp);
  }
}

/* ---- integer parsing ---- */

static int digit_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z')
    return c - 'A' + 10;
  return 99;
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* The magnitude of an optionally signed integer; *ovf when it exceeds 64 bits. *end is
 * s itself when there are no digits (base 0 and 16 accept 0x, base 0 a leading 0 as
 * octal). */
static uint64_t parse_int(const char *s, char **end, int base, int *neg, int *ovf) {
  const char *p = s;
  *neg = *ovf = 0;
  if (base < 0 || base == 1 || base > 36) {
    errno = EINVAL;
    if (end)
      *end = (char *)s;
    return 0;
  }
  while (is_space(*p))
    ++p;
  if (*p == '+' || *p == '-')
    *neg = *p++ == '-';
  if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 0x20) == 'x' &&
      digit_value(p[2]) < 16) {
    p += 2;
    base = 16;
  } else if (base == 0) {
    base = p[0] == '0' ? 8 : 10;
  }
  uint64_t v = 0;
  const char *first = p;
  for (int d; (d = digit_value(*p)) < base; ++p) {
    if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
      *ovf = 1;
    v = v * (uint64_t)base + (uint64_t)d;
  }
  if (end)
    *end = (char *)(p == first ? s : p);
  return v;
}

unsigned long long strtoull(const char *restrict s, char **restrict end, int base) {
  int neg, ovf;
  const uint64_t v = parse_int(s, end, base, &neg, &ovf);
  if (ovf) {
    errno = ERANGE;
    return UINT64_MAX;
  }
  return neg ? 0 - v : v;
}

long long strtoll(const char *restrict s, char **restrict end, int base) {
  int neg, ovf;
  const uint64_t v = parse_int(s, end, base, &neg, &ovf);
  if (ovf || v > (uint64_t)INT64_MAX + neg) {
    errno = ERANGE;
    return neg ? INT64_MIN : INT64_MAX;
  }
  return neg ? (long long)(0 - v) : (long long)v;
}

unsigned long strtoul(const char *restrict s, char **restrict end, int base) {
  int neg, ovf;
  const uint64_t v = parse_int(s, end, base, &neg, &ovf);
  if (ovf || v > (unsigned long)-1) {
    errno = ERANGE;
    return (unsigned long)-1;
  }
  return neg ? 0ul - (unsigned long)v : (unsigned long)v;
}

long strtol(const char *restrict s, char **restrict end, int base) {
  int neg, ovf;
  const uint64_t v = parse_int(s, end, base, &neg, &ovf);
  const uint64_t lmax = (unsigned long)-1 >> 1;
  if (ovf || v > lmax + (uint64_t)neg) {
    errno = ERANGE;
    return neg ? (long)(0 - lmax) - 1 : (long)lmax;
  }
  return neg ? (long)(0 - v) : (long)v;
}

int atoi(const char *s) { return (int)strtol(s, 0, 10); }

int abs(int v) { return v < 0 ? -v : v; }
long labs(long v) { return v < 0 ? -v : v; }
long long llabs(long long v) { return v < 0 ? -v : v; }

char *getenv(const char *name) {
  const size_t n = strlen(name);
  for (char **e = kiln_fs_envp; e && *e; ++e)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
      return *e + n + 1;
  return 0;
}

/* ---- process end ---- */

#define MAX_ATEXIT 32
static void (*atexit_fns[MAX_ATEXIT])(void);
static int n_atexit;

int atexit(void (*fn)(void)) {
  if (n_atexit == MAX_ATEXIT)
    return -1;
  atexit_fns[n_atexit++] = fn;
  return 0;
}

/* start.c calls this (a weak reference there) when kiln_fs_main returns, so programs
 * that define kiln_fs_main themselves get their stdio flushed too. */
void kiln_libc_at_exit(void) {
  while (n_atexit > 0)
    atexit_fns[--n_atexit]();
  kiln_libc_flush_all();
}

void exit(int code) {
  kiln_libc_at_exit();
  kiln_fs_exit(code);
}

#define KILN_SYS_KILL 129
#define KILN_SYS_GETPID 172
#define KILN_SIGABRT 6

void abort(void) {
  /* die by SIGABRT, as the shell expects of abort; exit 134 if that is blocked */
  const long pid = kiln_fs_syscall(KILN_SYS_GETPID, 0, 0, 0, 0, 0, 0);
  kiln_fs_syscall(KILN_SYS_KILL, pid, KILN_SIGABRT, 0, 0, 0, 0);
  kiln_fs_exit(134);
}

/* A program may define main instead of kiln_fs_main; main is weak here so that programs
 * which define kiln_fs_main (and no main) still link with the library. A weak reference
 * does not pull main out of an archive: link such programs with `-u main`. */
extern int main(int argc, char **argv) __attribute__((weak));

__attribute__((weak)) int kiln_fs_main(int argc, char **argv) {
  if (!main) {
    kiln_fs_puts(2, "no main and no kiln_fs_main linked (main in an archive needs -u main)\n");
    return 127;
  }
  exit(main(argc, argv));
}
