/* Minimal output for freestanding test programs: kiln_fs_puts and a printf subset
 * (fs.h). Formats into a 512-byte buffer per call; longer output is cut. */
#include <stdarg.h>

#include "fs.h"

int kiln_fs_puts(int fd, const char *s) {
  size_t n = 0;
  while (s[n])
    ++n;
  while (n) {
    const long w = kiln_fs_write(fd, s, n);
    if (w < 0)
      return (int)w;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

typedef struct out_s {
  char buf[512];
  size_t len;
} out_t;

static void put(out_t *o, char c) {
  if (o->len < sizeof(o->buf) - 1)
    o->buf[o->len++] = c;
}

static void put_u(out_t *o, unsigned long long v, unsigned base, int min_digits) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  while (n < min_digits)
    tmp[n++] = '0';
  while (n)
    put(o, tmp[--n]);
}

static void put_f(out_t *o, double v, int prec) {
  if (v != v) {
    put(o, 'n'), put(o, 'a'), put(o, 'n');
    return;
  }
  if (v < 0) {
    put(o, '-');
    v = -v;
  }
  if (v > 1e18) {
    put(o, 'i'), put(o, 'n'), put(o, 'f');
    return;
  }
  unsigned long long scale = 1;
  for (int i = 0; i < prec; ++i)
    scale *= 10;
  const unsigned long long fixed = (unsigned long long)(v * (double)scale + 0.5);
  put_u(o, fixed / scale, 10, 1);
  if (prec) {
    put(o, '.');
    put_u(o, fixed % scale, 10, prec);
  }
}

int kiln_fs_printf(const char *fmt, ...) {
  out_t o;
  o.len = 0;
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; ++p) {
    if (*p != '%') {
      put(&o, *p);
      continue;
    }
    ++p;
    int prec = 6, longs = 0;
    if (*p == '.') {
      prec = 0;
      for (++p; *p >= '0' && *p <= '9'; ++p)
        prec = prec * 10 + (*p - '0');
      if (prec > 9)
        prec = 9;
    }
    while (*p == 'l')
      ++longs, ++p;
    switch (*p) {
    case 'd': {
      long long v = longs >= 2 ? va_arg(ap, long long) : longs ? va_arg(ap, long) : va_arg(ap, int);
      if (v < 0) {
        put(&o, '-');
        put_u(&o, 0ull - (unsigned long long)v, 10, 1);
      } else {
        put_u(&o, (unsigned long long)v, 10, 1);
      }
      break;
    }
    case 'u':
    case 'x': {
      unsigned long long v = longs >= 2 ? va_arg(ap, unsigned long long)
                             : longs    ? va_arg(ap, unsigned long)
                                        : va_arg(ap, unsigned);
      put_u(&o, v, *p == 'x' ? 16 : 10, 1);
      break;
    }
    case 'f':
    case 'g':
    case 'e': put_f(&o, va_arg(ap, double), prec); break;
    case 's': {
      const char *s = va_arg(ap, const char *);
      for (s = s ? s : "(null)"; *s; ++s)
        put(&o, *s);
      break;
    }
    case 'c': put(&o, (char)va_arg(ap, int)); break;
    case '%': put(&o, '%'); break;
    default: put(&o, '%'); put(&o, *p); break;
    }
    if (!*p)
      break;
  }
  va_end(ap);
  o.buf[o.len] = 0;
  kiln_fs_puts(1, o.buf);
  return (int)o.len;
}
