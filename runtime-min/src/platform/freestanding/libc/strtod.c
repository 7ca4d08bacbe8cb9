/* strtod: decimal (with exponent), "inf"/"infinity" and "nan" in any case. Up to 19
 * significant digits are kept (later ones only move the exponent). Exact cases (digits
 * < 2^53 and a power of ten up to 10^22) take one correctly rounded multiply or divide;
 * the rest scale in double-double, which is correctly rounded except in rare near-tie
 * cases (and subnormal results, rounded twice), always within 1 ulp. Hexadecimal floats
 * are not parsed. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "dd.h"

#pragma STDC FP_CONTRACT OFF

static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static dd_t pow10_dd(int n) { /* 10^n, 0 <= n <= 308, by squaring */
  dd_t r = {1.0, 0.0}, b = {10.0, 0.0};
  for (; n; n >>= 1) {
    if (n & 1)
      r = dd_mul(r, b);
    b = dd_mul(b, b);
  }
  return r;
}

static int lower(char c) { return c | 0x20; }

static int match(const char *s, const char *word) { /* case-insensitive prefix */
  int i = 0;
  for (; word[i]; ++i)
    if (lower(s[i]) != word[i])
      return 0;
  return i;
}

double strtod(const char *restrict s, char **restrict end) {
  const char *p = s;
  while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
    ++p;
  const int neg = *p == '-';
  if (*p == '+' || *p == '-')
    ++p;
  const double sign = neg ? -1.0 : 1.0;
  int n;
  if ((n = match(p, "inf"))) {
    p += n;
    if ((n = match(p, "inity")))
      p += n;
    if (end)
      *end = (char *)p;
    return sign * __builtin_inf();
  }
  if ((n = match(p, "nan"))) {
    p += n;
    if (*p == '(') { /* nan(chars): the chars are ignored */
      const char *q = p + 1;
      while ((*q >= '0' && *q <= '9') || (lower(*q) >= 'a' && lower(*q) <= 'z') || *q == '_')
        ++q;
      if (*q == ')')
        p = q + 1;
    }
    if (end)
      *end = (char *)p;
    return sign * __builtin_nan("");
  }
  uint64_t mant = 0;
  int ndig = 0, dexp = 0, any = 0;
  for (; *p >= '0' && *p <= '9'; ++p, any = 1) {
    if (ndig < 19) {
      mant = mant * 10 + (uint64_t)(*p - '0');
      ndig += mant != 0; /* leading zeros are not significant */
    } else {
      ++dexp;
    }
  }
  if (*p == '.') {
    for (++p; *p >= '0' && *p <= '9'; ++p, any = 1) {
      if (ndig < 19) {
        mant = mant * 10 + (uint64_t)(*p - '0');
        ndig += mant != 0;
        --dexp;
      }
    }
  }
  if (!any) {
    if (end)
      *end = (char *)s;
    return 0.0;
  }
  if (lower(*p) == 'e') {
    const char *q = p + 1;
    const int eneg = *q == '-';
    if (*q == '+' || *q == '-')
      ++q;
    if (*q >= '0' && *q <= '9') {
      int e = 0;
      for (; *q >= '0' && *q <= '9'; ++q)
        if (e < 100000)
          e = e * 10 + (*q - '0');
      dexp += eneg ? -e : e;
      p = q;
    }
  }
  if (end)
    *end = (char *)p;
  if (mant == 0)
    return sign * 0.0;
  if (mant < (1ull << 53) && dexp >= -22 && dexp <= 22)
    return sign * (dexp >= 0 ? (double)mant * exact_pow10[dexp]
                             : (double)mant / exact_pow10[-dexp]);
  const int lead = dexp + ndig - 1; /* decimal exponent of the first digit */
  if (lead > 308) {
    errno = ERANGE;
    return sign * __builtin_inf();
  }
  if (lead < -325) {
    errno = ERANGE;
    return sign * 0.0;
  }
  const double mh = (double)mant;
  /* the part of mant the double missed, exactly (mant and mh differ by < 2^11) */
  const double ml = (double)(int64_t)(mant - (uint64_t)mh);
  dd_t v = dd_fast_two_sum(mh, ml);
  /* results near the bottom of the normal range: work 2^200 higher so the double-double
   * tails stay normal, and scale back once at the end (exact unless subnormal) */
  const int scaled = dexp < -280;
  if (scaled) {
    v.hi *= 0x1p200;
    v.lo *= 0x1p200;
  }
  if (dexp > 0) {
    if (dexp > 300) { /* two steps so 10^dexp does not overflow */
      v = dd_mul(v, pow10_dd(dexp - 300));
      dexp = 300;
    }
    v = dd_mul(v, pow10_dd(dexp));
  } else {
    if (dexp < -300) {
      v = dd_div(v, pow10_dd(-dexp - 300));
      dexp = -300;
    }
    v = dd_div(v, pow10_dd(-dexp));
  }
  if (!(v.hi <= 1.7976931348623157e308)) { /* overflowed (the tail is then NaN) */
    errno = ERANGE;
    return sign * __builtin_inf();
  }
  double r = v.hi + v.lo;
  if (scaled)
    r *= 0x1p-200;
  if (r == 0)
    errno = ERANGE;
  return sign * r;
}
