/* Shared between the freestanding libc's files; not a public header. */
#ifndef KILN_LIBC_INTERNAL_H_
#define KILN_LIBC_INTERNAL_H_

#include <stdarg.h>
#include <stddef.h>

/* format.c: the printf engine, writing through put(ctx, s, n); returns the number of
 * characters the format produces (all of them, whatever put does with them). */
typedef void (*kiln_libc_put_fn)(void *ctx, const char *s, size_t n);
int kiln_libc_vformat(kiln_libc_put_fn put, void *ctx, const char *fmt, va_list ap);

/* stdio.c: flushes every open stream (exit calls it). */
void kiln_libc_flush_all(void);

#endif
