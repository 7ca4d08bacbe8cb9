/* FILE on raw file descriptors. Writes are buffered (stdout, files opened for writing)
 * and flushed when the buffer fills, on fflush/fclose and at exit; stderr is unbuffered
 * so diagnostics are never lost. Reads go straight to read(2): the runtime reads files
 * in large blocks, so a read buffer would only add a copy. Streams are kept in a list so
 * exit can flush them all. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "libc_internal.h"

#define KILN_O_WRONLY 01
#define KILN_O_CREAT 0100
#define KILN_O_TRUNC 01000
#define KILN_O_CLOEXEC 02000000

struct kiln_libc_file {
  int fd;
  int err, eof;
  int buffered;
  size_t len;           /* bytes waiting in buf */
  char *buf;            /* BUFSIZ bytes when buffered */
  struct kiln_libc_file *next;
};

static char stdout_buf[BUFSIZ];
static FILE f_stdin = {0, 0, 0, 0, 0, 0, 0};
static FILE f_stderr = {2, 0, 0, 0, 0, 0, 0};
static FILE f_stdout = {1, 0, 0, 1, 0, stdout_buf, &f_stderr};
static FILE *open_list = &f_stdout; /* every stream that may hold buffered output */

FILE *stdin = &f_stdin;
FILE *stdout = &f_stdout;
FILE *stderr = &f_stderr;

static int write_all(FILE *f, const char *p, size_t n) {
  while (n) {
    const long w = kiln_fs_write(f->fd, p, n);
    if (w < 0) {
      if (w == -EINTR)
        continue;
      errno = (int)-w;
      f->err = 1;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int flush1(FILE *f) {
  if (!f->buffered || !f->len)
    return 0;
  const size_t n = f->len;
  f->len = 0;
  return write_all(f, f->buf, n) ? EOF : 0;
}

void kiln_libc_flush_all(void) {
  for (FILE *f = open_list; f; f = f->next)
    flush1(f);
}

int fflush(FILE *f) {
  if (!f) {
    int r = 0;
    for (FILE *g = open_list; g; g = g->next)
      r |= flush1(g);
    return r;
  }
  return flush1(f);
}

FILE *fopen(const char *restrict path, const char *restrict mode) {
  int flags;
  if (mode[0] == 'r' && mode[1] != '+' && (mode[1] != 'b' || mode[2] != '+')) {
    flags = KILN_FS_O_RDONLY;
  } else if (mode[0] == 'w' && mode[1] != '+' && (mode[1] != 'b' || mode[2] != '+')) {
    flags = KILN_O_WRONLY | KILN_O_CREAT | KILN_O_TRUNC;
  } else { /* append and update modes are not needed by kiln */
    errno = EINVAL;
    return 0;
  }
  const long fd = kiln_fs_syscall(KILN_FS_SYS_OPENAT, KILN_FS_AT_FDCWD, (long)path,
                                  flags | KILN_O_CLOEXEC, 0644, 0, 0);
  if (fd < 0) {
    errno = (int)-fd;
    return 0;
  }
  FILE *f = calloc(1, sizeof *f);
  if (f && flags != KILN_FS_O_RDONLY) {
    f->buf = malloc(BUFSIZ);
    f->buffered = 1;
  }
  if (!f || (f->buffered && !f->buf)) {
    free(f);
    kiln_fs_close((int)fd);
    errno = ENOMEM;
    return 0;
  }
  f->fd = (int)fd;
  f->next = open_list;
  open_list = f;
  return f;
}

int fclose(FILE *f) {
  int r = flush1(f);
  for (FILE **pp = &open_list; *pp; pp = &(*pp)->next)
    if (*pp == f) {
      *pp = f->next;
      break;
    }
  if (kiln_fs_close(f->fd) < 0)
    r = EOF;
  if (f != stdin && f != stdout && f != stderr) {
    free(f->buf);
    free(f);
  }
  return r;
}

size_t fread(void *restrict buf, size_t size, size_t n, FILE *restrict f) {
  if (!size || !n)
    return 0;
  const size_t want = size * n;
  size_t got = 0;
  while (got < want) {
    const long r = kiln_fs_read(f->fd, (char *)buf + got, want - got);
    if (r < 0) {
      if (r == -EINTR)
        continue;
      errno = (int)-r;
      f->err = 1;
      break;
    }
    if (r == 0) {
      f->eof = 1;
      break;
    }
    got += (size_t)r;
  }
  return got / size;
}

size_t fwrite(const void *restrict buf, size_t size, size_t n, FILE *restrict f) {
  if (!size || !n)
    return 0;
  const size_t total = size * n;
  const char *p = buf;
  if (!f->buffered)
    return write_all(f, p, total) ? 0 : n;
  if (f->len + total > BUFSIZ) {
    if (flush1(f))
      return 0;
    if (total >= BUFSIZ) /* big writes bypass the buffer */
      return write_all(f, p, total) ? 0 : n;
  }
  memcpy(f->buf + f->len, p, total);
  f->len += total;
  return n;
}

int ferror(FILE *f) { return f->err; }
int feof(FILE *f) { return f->eof; }
void clearerr(FILE *f) { f->err = f->eof = 0; }

int fputs(const char *restrict s, FILE *restrict f) {
  const size_t n = strlen(s);
  return fwrite(s, 1, n, f) == n || n == 0 ? 0 : EOF;
}

int fputc(int c, FILE *f) {
  const char ch = (char)c;
  return fwrite(&ch, 1, 1, f) == 1 ? (unsigned char)ch : EOF;
}

int putc(int c, FILE *f) { return fputc(c, f); }
int putchar(int c) { return fputc(c, stdout); }

int puts(const char *s) { return fputs(s, stdout) == EOF ? EOF : fputc('\n', stdout); }

int fgetc(FILE *f) {
  unsigned char c;
  return fread(&c, 1, 1, f) == 1 ? c : EOF;
}

int getc(FILE *f) { return fgetc(f); }

/* ---- formatted output ---- */

static void put_file(void *ctx, const char *s, size_t n) { fwrite(s, 1, n, ctx); }

int vfprintf(FILE *restrict f, const char *restrict fmt, va_list ap) {
  const int err0 = f->err;
  const int n = kiln_libc_vformat(put_file, f, fmt, ap);
  return f->err && !err0 ? -1 : n;
}

int fprintf(FILE *restrict f, const char *restrict fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vfprintf(f, fmt, ap);
  va_end(ap);
  return n;
}

int vprintf(const char *restrict fmt, va_list ap) { return vfprintf(stdout, fmt, ap); }

int printf(const char *restrict fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vfprintf(stdout, fmt, ap);
  va_end(ap);
  return n;
}

typedef struct strbuf_s {
  char *p;
  size_t cap, len; /* cap counts the terminating NUL */
} strbuf_t;

static void put_str(void *ctx, const char *s, size_t n) {
  strbuf_t *b = ctx;
  for (size_t i = 0; i < n; ++i, ++b->len)
    if (b->len + 1 < b->cap)
      b->p[b->len] = s[i];
}

int vsnprintf(char *restrict buf, size_t n, const char *restrict fmt, va_list ap) {
  strbuf_t b = {buf, n, 0};
  const int r = kiln_libc_vformat(put_str, &b, fmt, ap);
  if (n)
    buf[b.len < n ? b.len : n - 1] = 0;
  return r;
}

int snprintf(char *restrict buf, size_t n, const char *restrict fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int r = vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return r;
}

int vsprintf(char *restrict buf, const char *restrict fmt, va_list ap) {
  return vsnprintf(buf, (size_t)-1 / 2, fmt, ap);
}

int sprintf(char *restrict buf, const char *restrict fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int r = vsnprintf(buf, (size_t)-1 / 2, fmt, ap);
  va_end(ap);
  return r;
}
