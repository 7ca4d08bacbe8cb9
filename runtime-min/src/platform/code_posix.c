/* Loading the artifact's code section (an ELF shared object) with the dynamic loader,
 * without leaving a file behind: the bytes go to an anonymous memfd that is opened as
 * /proc/self/fd/N; where memfd_create is missing (old kernels, seccomp) they go to a
 * temporary file in $TMPDIR that is unlinked as soon as dlopen returns.
 *
 * The dynamic loader knows an object by the path it was opened with, and hands back the
 * object already loaded under that path. A memfd closed after dlopen frees its number, so
 * the next artifact's memfd would get the same /proc/self/fd/N and, loaded in the same
 * process while the first is still loaded, silently run the first artifact's code. The
 * memfd therefore stays open as long as its code is loaded: the handle is {dlopen handle,
 * fd}. (Temporary files get mkstemp's random names, so a repeat is improbable, not
 * impossible.) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"

typedef struct {
  void *dl;
  int fd; /* the memfd the code was opened from, -1 for a temporary file */
} loaded_code_t;

static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int memfd(void) {
#if defined(SYS_memfd_create)
  return (int)syscall(SYS_memfd_create, "kiln-code", 1u /* MFD_CLOEXEC */);
#else
  errno = ENOSYS;
  return -1;
#endif
}

/* dlopen's message without the (unhelpful) /proc/self/fd/N or temp path in front. */
static const char *dl_message(void) {
  const char *m = dlerror();
  if (!m)
    return "unknown dynamic loader error";
  const char *colon = strstr(m, ": ");
  return colon ? colon + 2 : m;
}

static kiln_status_t open_handle(const char *path, void **out_handle, kiln_error_t *err) {
  dlerror();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "the code section is not a loadable shared object: %s",
                          dl_message());
  *out_handle = h;
  return KILN_STATUS_OK;
}

/* On success *out_fd is the memfd, to stay open while the code is loaded (see above). */
static kiln_status_t load_from_memfd(const uint8_t *code, size_t size, void **out_handle,
                                     int *out_fd, int *out_tried, kiln_error_t *err) {
  *out_tried = 0;
  int fd = memfd();
  if (fd < 0)
    return KILN_STATUS_UNSUPPORTED;
  *out_tried = 1;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  kiln_status_t st;
  if (write_all(fd, code, size) != 0)
    st = kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot write the code to a memfd: %s",
                        strerror(errno));
  else
    st = open_handle(path, out_handle, err);
  if (st == KILN_STATUS_OK)
    *out_fd = fd;
  else
    close(fd);
  return st;
}

static kiln_status_t load_from_tmpfile(const uint8_t *code, size_t size, void **out_handle,
                                       kiln_error_t *err) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir)
    dir = "/tmp";
  char path[512];
  if ((size_t)snprintf(path, sizeof path, "%s/kiln-code-XXXXXX", dir) >= sizeof path)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "TMPDIR '%s' is too long", dir);
  int fd = mkstemp(path);
  if (fd < 0)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot create a temporary file in %s: %s",
                          dir, strerror(errno));
  kiln_status_t st;
  if (write_all(fd, code, size) != 0)
    st = kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot write the code to %s: %s", path,
                        strerror(errno));
  else
    st = open_handle(path, out_handle, err);
  close(fd);
  unlink(path);
  return st;
}

kiln_status_t kiln_platform_load_code(const uint8_t *code, size_t size, const char *entry,
                                      void **out_handle, void **out_entry, kiln_error_t *err) {
  *out_handle = NULL;
  *out_entry = NULL;
  loaded_code_t *lc = (loaded_code_t *)malloc(sizeof *lc);
  if (!lc)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "out of memory loading the code");
  lc->dl = NULL;
  lc->fd = -1;
  int tried = 0;
  kiln_status_t st = KILN_STATUS_UNSUPPORTED;
  if (getenv("KILN_NO_MEMFD") == NULL) /* set: test the temporary-file path */
    st = load_from_memfd(code, size, &lc->dl, &lc->fd, &tried, err);
  if (!tried)
    st = load_from_tmpfile(code, size, &lc->dl, err);
  if (st != KILN_STATUS_OK) {
    free(lc);
    return st;
  }
  dlerror();
  void *sym = dlsym(lc->dl, entry);
  if (!sym) {
    kiln_platform_unload_code(lc);
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "the code section does not export the entry point '%s'", entry);
  }
  *out_handle = lc;
  *out_entry = sym;
  return KILN_STATUS_OK;
}

void *kiln_platform_code_symbol(void *handle, const char *name) {
  loaded_code_t *lc = (loaded_code_t *)handle;
  return lc ? dlsym(lc->dl, name) : NULL;
}

void kiln_platform_unload_code(void *handle) {
  loaded_code_t *lc = (loaded_code_t *)handle;
  if (!lc)
    return;
  dlclose(lc->dl);
  if (lc->fd >= 0)
    close(lc->fd);
  free(lc);
}

const kiln_linked_model_t *kiln_platform_linked_model(void) { return NULL; }
