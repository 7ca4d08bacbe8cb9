/* The printf engine: flags - + space 0 #, width and precision (also *), length modifiers
 * hh h l ll z t j (L is read as plain double: long double is double here), conversions
 * d i u x X o c s p % f F e E g G.
 *
 * Floating point is converted exactly, so the digits match glibc's: the double m * 2^e is
 * split into an integer part (a big integer, turned into decimal by dividing by 10^9) and
 * a binary fraction whose decimal digits come out one at a time by multiplying by 10.
 * The digit after the last one printed and whether anything nonzero follows decide the
 * rounding: to nearest, exact ties to even, as glibc does in the default rounding mode. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "libc_internal.h"

typedef struct out_s {
  kiln_libc_put_fn put;
  void *ctx;
  size_t total;
} out_t;

static void emit(out_t *o, const char *s, size_t n) {
  if (n) {
    o->put(o->ctx, s, n);
    o->total += n;
  }
}

static void pad(out_t *o, char c, long n) {
  char b[32];
  memset(b, c, sizeof b);
  while (n > 0) {
    const long k = n > 32 ? 32 : n;
    emit(o, b, (size_t)k);
    n -= k;
  }
}

typedef struct spec_s {
  int minus, plus, space, zero, alt;
  int width, prec; /* prec < 0: none given */
} spec_t;

/* Writes prefix (sign, 0x), `zeros` zeros, body, `tailz` zeros and suffix, padded to the
 * width: spaces left or right, or zeros after the prefix when the 0 flag asks. */
static void emit_field(out_t *o, const spec_t *sp, const char *prefix, long zeros,
                       const char *body, size_t blen, long tailz, const char *suffix,
                       int zero_pad) {
  const size_t plen = strlen(prefix), slen = strlen(suffix);
  const long len = (long)(plen + blen + slen) + zeros + tailz;
  long fill = sp->width > len ? sp->width - len : 0;
  if (!sp->minus && !zero_pad)
    pad(o, ' ', fill);
  emit(o, prefix, plen);
  if (!sp->minus && zero_pad)
    pad(o, '0', fill);
  pad(o, '0', zeros);
  emit(o, body, blen);
  pad(o, '0', tailz);
  emit(o, suffix, slen);
  if (sp->minus)
    pad(o, ' ', fill);
}

static void fmt_int(out_t *o, const spec_t *sp, uint64_t v, int neg, int is_signed,
                    unsigned base, int upper, int is_ptr) {
  char tmp[24];
  size_t n = 0;
  const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  for (uint64_t t = v; t; t /= base)
    tmp[sizeof tmp - 1 - n++] = dig[t % base];
  long prec = sp->prec < 0 ? 1 : sp->prec;
  if (base == 8 && sp->alt && prec <= (long)n) /* %#o: the first digit is a zero */
    prec = (long)n + 1;
  char prefix[3] = {0};
  if (is_signed && neg)
    prefix[0] = '-';
  else if (is_signed && sp->plus)
    prefix[0] = '+';
  else if (is_signed && sp->space)
    prefix[0] = ' ';
  else if (base == 16 && (sp->alt || is_ptr) && v) {
    prefix[0] = '0';
    prefix[1] = upper ? 'X' : 'x';
  }
  const long zeros = prec > (long)n ? prec - (long)n : 0;
  emit_field(o, sp, prefix, zeros, tmp + sizeof tmp - n, n, 0, "", sp->zero && sp->prec < 0);
}

/* ---- exact decimal digits of a finite double >= 0 ---- */

#define LIMBS 36     /* 1074 fraction bits + 4 for a digit, or 1024 integer bits */
#define MAX_FRAC 1100 /* past 1074 digits a double's fraction is all zeros */

typedef struct digits_s {
  uint32_t f[LIMBS]; /* the fraction: f / 2^k */
  int k;
  char idig[320]; /* the integer part in decimal, no leading zeros */
  int ni, ip;
} digits_t;

static void digits_init(digits_t *d, double a) {
  union { double d; uint64_t u; } c;
  c.d = a;
  int be = (int)((c.u >> 52) & 0x7ff);
  uint64_t m = c.u & 0xfffffffffffffull;
  if (be)
    m |= 1ull << 52;
  else
    be = 1;
  const int e = be - 1075; /* a = m * 2^e */
  memset(d, 0, sizeof *d);
  uint32_t w[LIMBS] = {0};
  int nw = 0;
  if (e >= 0) { /* integer: m << e */
    const int lw = e / 32, sh = e % 32;
    const uint64_t lo = (m << sh), hi = sh ? m >> (64 - sh) : 0;
    w[lw] = (uint32_t)lo;
    w[lw + 1] = (uint32_t)(lo >> 32);
    if (lw + 2 < LIMBS)
      w[lw + 2] = (uint32_t)hi;
    nw = lw + 3 < LIMBS ? lw + 3 : LIMBS;
  } else {
    d->k = -e;
    const uint64_t ipart = d->k >= 64 ? 0 : m >> d->k;
    const uint64_t fpart = d->k >= 64 ? m : m & ((1ull << d->k) - 1);
    w[0] = (uint32_t)ipart;
    w[1] = (uint32_t)(ipart >> 32);
    nw = 2;
    d->f[0] = (uint32_t)fpart;
    d->f[1] = (uint32_t)(fpart >> 32);
  }
  /* integer part to decimal: 9 digits at a time, least significant chunk first */
  uint32_t chunks[40];
  int nc = 0;
  while (nw > 0 && w[nw - 1] == 0)
    --nw;
  while (nw > 0) {
    uint64_t r = 0;
    for (int i = nw - 1; i >= 0; --i) {
      const uint64_t cur = (r << 32) | w[i];
      w[i] = (uint32_t)(cur / 1000000000u);
      r = cur % 1000000000u;
    }
    chunks[nc++] = (uint32_t)r;
    while (nw > 0 && w[nw - 1] == 0)
      --nw;
  }
  for (int i = nc - 1; i >= 0; --i) {
    char t[9];
    uint32_t v = chunks[i];
    for (int j = 8; j >= 0; --j, v /= 10)
      t[j] = (char)('0' + v % 10);
    int j = 0;
    if (i == nc - 1)
      while (j < 8 && t[j] == '0')
        ++j;
    for (; j < 9; ++j)
      d->idig[d->ni++] = t[j];
  }
}

static int frac_next(digits_t *d) {
  if (!d->k)
    return 0;
  const int nl = d->k / 32 + 2 < LIMBS ? d->k / 32 + 2 : LIMBS;
  uint64_t c = 0;
  for (int i = 0; i < nl; ++i) {
    c += (uint64_t)d->f[i] * 10u;
    d->f[i] = (uint32_t)c;
    c >>= 32;
  }
  const int li = d->k / 32, sh = d->k % 32;
  const uint64_t top = d->f[li] | (li + 1 < LIMBS ? (uint64_t)d->f[li + 1] << 32 : 0);
  const int digit = (int)((top >> sh) & 15);
  d->f[li] &= sh ? (1u << sh) - 1 : 0;
  if (li + 1 < LIMBS)
    d->f[li + 1] = 0;
  return digit;
}

static int next_digit(digits_t *d) {
  if (d->ip < d->ni)
    return d->idig[d->ip++] - '0';
  return frac_next(d);
}

static int rest_nonzero(const digits_t *d) {
  for (int i = d->ip; i < d->ni; ++i)
    if (d->idig[i] != '0')
      return 1;
  for (int i = 0; i < LIMBS; ++i)
    if (d->f[i])
      return 1;
  return 0;
}

/* Rounds buf[0..n) (digits) by the next digit g and sticky; returns 1 when the carry ran
 * out of the first digit (the caller prepends a 1). */
static int round_digits(char *buf, int n, int g, int sticky) {
  const int last = n ? buf[n - 1] - '0' : 0;
  if (!(g > 5 || (g == 5 && (sticky || (last & 1)))))
    return 0;
  for (int i = n - 1; i >= 0; --i) {
    if (buf[i] != '9') {
      ++buf[i];
      return 0;
    }
    buf[i] = '0';
  }
  return 1;
}

/* %f: integer digits, '.', prec digits into buf (*tailz exact zeros to follow). */
static int conv_fixed(double a, int prec, int alt, char *buf, long *tailz) {
  digits_t d;
  digits_init(&d, a);
  const int p = prec > MAX_FRAC ? MAX_FRAC : prec;
  *tailz = prec - p;
  char *dg = buf + 1; /* room for a carry */
  int n = 0;
  if (d.ni == 0)
    dg[n++] = '0';
  const int nint = (d.ni ? d.ni : 1);
  for (int i = 0; i < d.ni; ++i)
    dg[n++] = (char)('0' + next_digit(&d));
  for (int i = 0; i < p; ++i)
    dg[n++] = (char)('0' + next_digit(&d));
  const int g = next_digit(&d);
  int lead = 0;
  if (round_digits(dg, n, g, rest_nonzero(&d))) {
    *--dg = '1';
    ++n;
    lead = 1;
  }
  /* insert the point after the integer digits */
  const int ilen = nint + lead;
  int len = 0;
  for (int i = 0; i < ilen; ++i)
    buf[len++] = dg[i];
  if (prec > 0 || alt) {
    /* shift the fraction digits one to the right for the point (memmove: overlap) */
    memmove(buf + len + 1, dg + ilen, (size_t)(n - ilen));
    buf[len++] = '.';
    len += n - ilen;
  }
  return len;
}

/* %e: the digits d.ddd (prec after the point) into buf; *x gets the decimal exponent. */
static int conv_exp(double a, int prec, int alt, char *buf, int *x, long *tailz) {
  digits_t d;
  digits_init(&d, a);
  const int p = prec > MAX_FRAC ? MAX_FRAC : prec;
  *tailz = prec - p;
  char dg[MAX_FRAC + 2];
  int n = 0, ex = 0;
  int first;
  if (d.ni) {
    ex = d.ni - 1;
    first = next_digit(&d);
  } else if (a == 0) {
    first = 0;
  } else {
    ex = -1;
    while ((first = frac_next(&d)) == 0)
      --ex;
  }
  dg[n++] = (char)('0' + first);
  for (int i = 0; i < p; ++i)
    dg[n++] = (char)('0' + next_digit(&d));
  const int g = next_digit(&d);
  if (round_digits(dg, n, g, rest_nonzero(&d))) { /* 9.99 -> 10.0: 1.00 and one more */
    dg[0] = '1';
    ++ex;
  }
  int len = 0;
  buf[len++] = dg[0];
  if (prec > 0 || alt)
    buf[len++] = '.';
  memcpy(buf + len, dg + 1, (size_t)(n - 1));
  len += n - 1;
  *x = ex;
  return len;
}

static void fmt_float(out_t *o, spec_t sp, double v, char conv) {
  union { double d; uint64_t u; } c;
  c.d = v;
  const int neg = (int)(c.u >> 63);
  const int upper = conv == 'F' || conv == 'E' || conv == 'G';
  char prefix[2] = {0};
  if (neg)
    prefix[0] = '-';
  else if (sp.plus)
    prefix[0] = '+';
  else if (sp.space)
    prefix[0] = ' ';
  c.u &= ~(1ull << 63);
  const double a = c.d;
  if (a != a || a > 1.7976931348623157e308) { /* nan, inf: never zero padded */
    const char *s = a != a ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
    emit_field(o, &sp, prefix, 0, s, 3, 0, "", 0);
    return;
  }
  static char buf[MAX_FRAC + 340]; /* single-threaded; too big for a small stack */
  int prec = sp.prec < 0 ? 6 : sp.prec;
  long tailz = 0;
  int len;
  char suffix[8] = {0};
  char lc = (char)(conv | 0x20);
  int strip = 0;
  if (lc == 'g') {
    const int P = prec == 0 ? 1 : prec;
    int x;
    conv_exp(a, P - 1, 0, buf, &x, &tailz);
    if (P > x && x >= -4) {
      lc = 'f';
      prec = P - 1 - x;
    } else {
      lc = 'e';
      prec = P - 1;
    }
    strip = !sp.alt;
  }
  if (lc == 'f') {
    len = conv_fixed(a, prec, sp.alt, buf, &tailz);
  } else {
    int x;
    len = conv_exp(a, prec, sp.alt, buf, &x, &tailz);
    const unsigned ax = (unsigned)(x < 0 ? -x : x);
    int s = 0;
    suffix[s++] = upper ? 'E' : 'e';
    suffix[s++] = x < 0 ? '-' : '+';
    if (ax >= 100)
      suffix[s++] = (char)('0' + ax / 100);
    suffix[s++] = (char)('0' + ax / 10 % 10);
    suffix[s++] = (char)('0' + ax % 10);
  }
  if (strip && memchr(buf, '.', (size_t)len)) { /* %g: no trailing zeros, no bare point */
    tailz = 0;
    while (buf[len - 1] == '0')
      --len;
    if (buf[len - 1] == '.')
      --len;
  }
  emit_field(o, &sp, prefix, 0, buf, (size_t)len, tailz, suffix, sp.zero);
}

int kiln_libc_vformat(kiln_libc_put_fn put, void *ctx, const char *fmt, va_list ap) {
  out_t o = {put, ctx, 0};
  const char *p = fmt;
  while (*p) {
    if (*p != '%') {
      const char *q = p;
      while (*q && *q != '%')
        ++q;
      emit(&o, p, (size_t)(q - p));
      p = q;
      continue;
    }
    ++p;
    spec_t sp = {0, 0, 0, 0, 0, 0, -1};
    for (;; ++p) {
      if (*p == '-')
        sp.minus = 1;
      else if (*p == '+')
        sp.plus = 1;
      else if (*p == ' ')
        sp.space = 1;
      else if (*p == '0')
        sp.zero = 1;
      else if (*p == '#')
        sp.alt = 1;
      else
        break;
    }
    if (*p == '*') {
      sp.width = va_arg(ap, int);
      if (sp.width < 0) { /* a negative width is the - flag */
        sp.minus = 1;
        sp.width = -sp.width;
      }
      ++p;
    } else {
      while (*p >= '0' && *p <= '9')
        sp.width = sp.width * 10 + (*p++ - '0');
    }
    if (*p == '.') {
      ++p;
      sp.prec = 0;
      if (*p == '*') {
        sp.prec = va_arg(ap, int);
        if (sp.prec < 0)
          sp.prec = -1; /* as if none were given */
        ++p;
      } else {
        while (*p >= '0' && *p <= '9')
          sp.prec = sp.prec * 10 + (*p++ - '0');
      }
    }
    int len = 0; /* -2 hh, -1 h, 1 l, 2 ll/j, 3 z, 4 t */
    if (*p == 'h') {
      len = p[1] == 'h' ? -2 : -1;
      p += p[1] == 'h' ? 2 : 1;
    } else if (*p == 'l') {
      len = p[1] == 'l' ? 2 : 1;
      p += p[1] == 'l' ? 2 : 1;
    } else if (*p == 'j') {
      len = 2, ++p;
    } else if (*p == 'z') {
      len = 3, ++p;
    } else if (*p == 't') {
      len = 4, ++p;
    } else if (*p == 'L') {
      ++p;
    }
    const char conv = *p;
    if (!conv)
      break;
    ++p;
    if (sp.minus)
      sp.zero = 0;
    switch (conv) {
    case 'd':
    case 'i': {
      long long v;
      switch (len) {
      case -2: v = (signed char)va_arg(ap, int); break;
      case -1: v = (short)va_arg(ap, int); break;
      case 1: v = va_arg(ap, long); break;
      case 2: v = va_arg(ap, long long); break;
      case 3: v = (long long)(ptrdiff_t)va_arg(ap, size_t); break;
      case 4: v = va_arg(ap, ptrdiff_t); break;
      default: v = va_arg(ap, int); break;
      }
      fmt_int(&o, &sp, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0, 1, 10, 0, 0);
      break;
    }
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      unsigned long long v;
      switch (len) {
      case -2: v = (unsigned char)va_arg(ap, unsigned); break;
      case -1: v = (unsigned short)va_arg(ap, unsigned); break;
      case 1: v = va_arg(ap, unsigned long); break;
      case 2: v = va_arg(ap, unsigned long long); break;
      case 3: v = va_arg(ap, size_t); break;
      case 4: v = (size_t)va_arg(ap, ptrdiff_t); break;
      default: v = va_arg(ap, unsigned); break;
      }
      const unsigned base = conv == 'u' ? 10 : conv == 'o' ? 8 : 16;
      fmt_int(&o, &sp, v, 0, 0, base, conv == 'X', 0);
      break;
    }
    case 'p': {
      const void *v = va_arg(ap, void *);
      if (!v) { /* glibc's spelling */
        spec_t s2 = sp;
        s2.prec = -1;
        emit_field(&o, &s2, "", 0, "(nil)", 5, 0, "", 0);
      } else {
        fmt_int(&o, &sp, (uintptr_t)v, 0, 0, 16, 0, 1);
      }
      break;
    }
    case 'c': {
      const char ch = (char)va_arg(ap, int);
      emit_field(&o, &sp, "", 0, &ch, 1, 0, "", 0);
      break;
    }
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (!s)
        s = "(null)";
      size_t n = 0;
      while (s[n] && (sp.prec < 0 || n < (size_t)sp.prec))
        ++n;
      emit_field(&o, &sp, "", 0, s, n, 0, "", 0);
      break;
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G': fmt_float(&o, sp, va_arg(ap, double), conv); break;
    case '%': emit(&o, "%", 1); break;
    default: /* unknown: print it as written */
      emit(&o, "%", 1);
      emit(&o, &conv, 1);
      break;
    }
  }
  return (int)o.total;
}
