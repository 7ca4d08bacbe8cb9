/* kiln_error_t helpers and the default (malloc) allocator. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#endif
#include "error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kiln_status_t kiln_error_set(kiln_error_t *err, kiln_status_t status, const char *fmt, ...) {
  if (!err)
    return status;
  err->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return status;
}

void kiln_error_clear(kiln_error_t *err) {
  if (!err)
    return;
  err->status = KILN_STATUS_OK;
  err->message[0] = '\0';
}

kiln_status_t kiln_error_prefix(kiln_error_t *err, kiln_status_t status, const char *prefix) {
  if (!err)
    return status;
  char tmp[KILN_ERROR_MESSAGE_SIZE];
  memcpy(tmp, err->message, sizeof tmp);
  tmp[sizeof tmp - 1] = '\0';
  return kiln_error_set(err, status, "%s: %s", prefix, tmp);
}

static void *default_alloc(void *user, size_t size, size_t alignment) {
  (void)user;
  void *p = NULL;
  if (alignment < sizeof(void *))
    alignment = sizeof(void *);
  if (posix_memalign(&p, alignment, size ? size : 1) != 0)
    return NULL;
  return p;
}

static void default_free(void *user, void *ptr, size_t size) {
  (void)user;
  (void)size;
  free(ptr);
}

kiln_status_t kiln_allocator_resolve(const kiln_allocator_t *in, kiln_allocator_t *out,
                                     kiln_error_t *err) {
  if (!in) {
    out->alloc = default_alloc;
    out->free = default_free;
    out->user = NULL;
    return KILN_STATUS_OK;
  }
  if (!in->alloc || !in->free)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "the allocator needs both alloc and free callbacks");
  *out = *in;
  return KILN_STATUS_OK;
}

void *kiln_mem_alloc(const kiln_allocator_t *a, size_t size, size_t alignment,
                     const char *what, kiln_error_t *err) {
  void *p = a->alloc(a->user, size, alignment);
  if (!p) {
    kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s", size,
                   what);
    return NULL;
  }
  if ((uintptr_t)p % alignment != 0) {
    a->free(a->user, p, size);
    kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                   "the allocator returned %s memory not aligned to %zu bytes", what,
                   alignment);
    return NULL;
  }
  return p;
}

void kiln_mem_free(const kiln_allocator_t *a, void *ptr, size_t size) {
  if (ptr)
    a->free(a->user, ptr, size);
}
