/* kiln runtime-min: filling a caller's kiln_error_t (kiln/kiln.h), and the allocator
 * helpers every object uses. Internal. */
#ifndef KILN_PLATFORM_ERROR_H_
#define KILN_PLATFORM_ERROR_H_

#include <stddef.h>

#include "kiln/kiln.h"

#if defined(__GNUC__) || defined(__clang__)
#define KILN_PRINTF_(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KILN_PRINTF_(fmt, args)
#endif

/* Writes status and the formatted message to err (if not NULL); returns status. */
kiln_status_t kiln_error_set(kiln_error_t *err, kiln_status_t status, const char *fmt, ...)
    KILN_PRINTF_(3, 4);
/* Status OK and an empty message. */
void kiln_error_clear(kiln_error_t *err);
/* Puts "prefix: " in front of err's message (keeps its status); returns the status. */
kiln_status_t kiln_error_prefix(kiln_error_t *err, kiln_status_t status, const char *prefix);

/* The caller's allocator, or malloc's when NULL. KILN_STATUS_INVALID_ARGUMENT when a
 * callback is missing. */
kiln_status_t kiln_allocator_resolve(const kiln_allocator_t *in, kiln_allocator_t *out,
                                     kiln_error_t *err);
/* size bytes aligned to `alignment` (not cleared); NULL on failure (err says what). A
 * misaligned pointer from the caller's allocator is given back and counts as a failure. */
void *kiln_mem_alloc(const kiln_allocator_t *a, size_t size, size_t alignment,
                     const char *what, kiln_error_t *err);
void kiln_mem_free(const kiln_allocator_t *a, void *ptr, size_t size);

#endif /* KILN_PLATFORM_ERROR_H_ */
