/* <math.h> functions, written for a target without a libm. exp and log reduce the
 * argument by powers of two and evaluate short series (within about 1 ulp over the
 * whole range, subnormal results included); sqrt is correctly rounded by an integer
 * square root; pow goes through a double-double logarithm. The float versions compute
 * in double and round, except sqrtf (the compiler helper __hexagon_sqrtf). Everything is
 * bit manipulation and + - * /, so nothing here calls back into itself. */
#include <math.h>
#include <stdint.h>

#include "dd.h"

#pragma STDC FP_CONTRACT OFF

float __hexagon_sqrtf(float x);

static uint64_t bits(double x) {
  union { double d; uint64_t u; } c;
  c.d = x;
  return c.u;
}

static double from_bits(uint64_t u) {
  union { double d; uint64_t u; } c;
  c.u = u;
  return c.d;
}

static double pow2i(int k) { return from_bits((uint64_t)(k + 1023) << 52); } /* normal k */

/* ln 2 split so that k * LN2_HI is exact for |k| < 2^11 */
static const double LN2_HI = 6.93147180369123816490e-01; /* 0x3fe62e42fee00000 */
static const double LN2_LO = 1.90821492927058770002e-10;
static const double INV_LN2 = 1.44269504088896338700e+00;

/* exp(hi + lo) with |lo| << |hi|, the lo part entering as a first-order correction */
static double exp_dd(double x, double xlo) {
  if (x != x)
    return x + x;
  if (x > 709.8)
    return HUGE_VAL;
  if (x < -746.0)
    return 0.0;
  const double kd = x * INV_LN2;
  const int k = (int)(kd < 0 ? kd - 0.5 : kd + 0.5);
  const double hi = x - k * LN2_HI; /* exact */
  const double lo = k * LN2_LO - xlo;
  const double r = hi - lo;                /* |r| <= 0.35 */
  const double corr = (hi - r) - lo;       /* what r lost */
  /* exp(r) - 1 = r + r^2 (1/2! + r/3! + ... + r^11/13!); the rest is < 2^-57 */
  double q = 1.0 / 6227020800.0;
  q = q * r + 1.0 / 479001600.0;
  q = q * r + 1.0 / 39916800.0;
  q = q * r + 1.0 / 3628800.0;
  q = q * r + 1.0 / 362880.0;
  q = q * r + 1.0 / 40320.0;
  q = q * r + 1.0 / 5040.0;
  q = q * r + 1.0 / 720.0;
  q = q * r + 1.0 / 120.0;
  q = q * r + 1.0 / 24.0;
  q = q * r + 1.0 / 6.0;
  q = q * r + 0.5;
  const double em1 = r + (r * r * q + corr * (1.0 + r));
  const double y = 1.0 + em1;
  if (k > 1023)
    return y * 2.0 * pow2i(k - 1);
  if (k < -1021) /* subnormal result: an exact scaling, then a single rounding */
    return y * pow2i(k + 1000) * pow2i(-1000);
  return y * pow2i(k);
}

double exp(double x) { return exp_dd(x, 0.0); }

/* log(x) as hi + *lo for finite x > 0: x = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1,
 * s = f / (2 + f), log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R(s^2))). */
static double log_dd(double x, double *lo) {
  uint64_t u = bits(x);
  int k = 0;
  if (u < 0x0010000000000000ull) { /* subnormal: make it normal */
    u = bits(x * 18014398509481984.0); /* 2^54 */
    k = -54;
  }
  k += (int)(u >> 52) - 1023;
  u = (u & 0xfffffffffffffull) | 0x3ff0000000000000ull;
  if (u > 0x3ff6a09e667f3bcdull) { /* m > sqrt(2): use m / 2 */
    u -= 0x0010000000000000ull;
    ++k;
  }
  const double f = from_bits(u) - 1.0; /* exact */
  const double s = f / (2.0 + f);
  const double z = s * s;
  double R = 2.0 / 25;
  R = R * z + 2.0 / 23;
  R = R * z + 2.0 / 21;
  R = R * z + 2.0 / 19;
  R = R * z + 2.0 / 17;
  R = R * z + 2.0 / 15;
  R = R * z + 2.0 / 13;
  R = R * z + 2.0 / 11;
  R = R * z + 2.0 / 9;
  R = R * z + 2.0 / 7;
  R = R * z + 2.0 / 5;
  R = R * z + 2.0 / 3;
  R *= z;
  const double hfsq = 0.5 * f * f;
  const double t2 = f - (hfsq - (s * (hfsq + R) + k * LN2_LO));
  const dd_t sum = dd_two_sum(k * LN2_HI, t2);
  *lo = sum.lo;
  return sum.hi;
}

double log(double x) {
  if (x != x)
    return x + x;
  if (x < 0)
    return NAN;
  if (x == 0)
    return -HUGE_VAL;
  if (x > 1.7976931348623157e308)
    return x;
  double lo;
  return log_dd(x, &lo);
}

/* Correctly rounded: 55 bits of the integer square root of the scaled significand,
 * the last two and the remainder rounding to nearest (a root is never a tie). */
double sqrt(double x) {
  const uint64_t u = bits(x);
  if ((u & 0x7fffffffffffffffull) == 0)
    return x; /* +-0 */
  if (u >> 63)
    return NAN;
  if (u >= 0x7ff0000000000000ull)
    return x; /* inf, nan */
  int e = (int)(u >> 52);
  uint64_t m = u & 0xfffffffffffffull;
  if (e == 0) { /* subnormal: normalize */
    e = 1;
    while (!(m & (1ull << 52))) {
      m <<= 1;
      --e;
    }
  } else {
    m |= 1ull << 52;
  }
  int E = e - 1075; /* x = m * 2^E */
  if (E & 1) {
    m <<= 1;
    --E;
  }
  /* v = m << 56 is in [2^108, 2^110): root in [2^54, 2^55), two bits of v per step */
  uint64_t root = 0, rem = 0;
  for (int i = 109; i >= 1; i -= 2) {
    const int lo_bit = i - 1 - 56; /* bit of m feeding this pair, when in range */
    uint64_t pair = 0;
    if (lo_bit + 1 >= 0 && lo_bit + 1 < 55)
      pair |= ((m >> (lo_bit + 1)) & 1) << 1;
    if (lo_bit >= 0 && lo_bit < 55)
      pair |= (m >> lo_bit) & 1;
    rem = (rem << 2) | pair;
    const uint64_t t = (root << 2) | 1;
    root <<= 1;
    if (rem >= t) {
      rem -= t;
      root |= 1;
    }
  }
  /* sqrt(x) = root * 2^((E - 56) / 2); root has 2 bits below the 53 kept */
  int re = (E - 56) / 2 + 2; /* exponent of root's bit 2 */
  const uint64_t low = root & 3;
  uint64_t r = root >> 2;
  if (low > 2 || (low == 2 && (rem != 0 || (r & 1))))
    ++r;
  if (r >> 53) {
    r >>= 1;
    ++re;
  }
  /* r in [2^52, 2^53): value r * 2^re, never subnormal or overflowing */
  return from_bits((uint64_t)(re + 52 + 1023) << 52 | (r & 0xfffffffffffffull));
}

double floor(double x) {
  uint64_t u = bits(x);
  const int e = (int)((u >> 52) & 0x7ff) - 1023;
  if (e >= 52)
    return x; /* integral already, inf, nan */
  if (e < 0) { /* |x| < 1 */
    if (x == 0)
      return x;
    return (u >> 63) ? -1.0 : 0.0;
  }
  const uint64_t mask = 0xfffffffffffffull >> e;
  if (!(u & mask))
    return x;
  if (u >> 63) /* negative: away from zero; a carry into the exponent is right */
    u += 0x0010000000000000ull >> e;
  return from_bits(u & ~mask);
}

double ceil(double x) { return -floor(-x); }

double fabs(double x) { return from_bits(bits(x) & 0x7fffffffffffffffull); }

static int is_int(double y) { return floor(y) == y; }
static int is_odd_int(double y) { /* |y| < 2^53 for odd */
  return is_int(y) && fabs(y) < 9007199254740992.0 && floor(y * 0.5) != y * 0.5;
}

double pow(double x, double y) {
  if (y == 0 || x == 1)
    return 1.0;
  if (x != x || y != y)
    return x + y;
  const double ay = fabs(y);
  if (ay > 1.7976931348623157e308) { /* y = +-inf */
    const double ax = fabs(x);
    if (ax == 1)
      return 1.0;
    return (ax > 1) == (y > 0) ? HUGE_VAL : 0.0;
  }
  double sign = 1.0;
  if (x < 0) {
    if (!is_int(y))
      return NAN;
    if (is_odd_int(y))
      sign = -1.0;
    x = -x;
  }
  if (x == 0) /* includes -0 */
    return y > 0 ? sign * 0.0 : sign * HUGE_VAL;
  if (x > 1.7976931348623157e308)
    return y > 0 ? sign * HUGE_VAL : sign * 0.0;
  double llo;
  const double lhi = log_dd(x, &llo);
  dd_t p = dd_two_prod(y, lhi); /* y log x in double-double */
  p.lo += y * llo;
  p = dd_fast_two_sum(p.hi, p.lo);
  return sign * exp_dd(p.hi, p.lo);
}

float expf(float x) { return (float)exp(x); }
float logf(float x) { return (float)log(x); }
float powf(float x, float y) { return (float)pow(x, y); }
float sqrtf(float x) { return __hexagon_sqrtf(x); }
float floorf(float x) { return (float)floor(x); }
float ceilf(float x) { return (float)ceil(x); }
float fabsf(float x) {
  union { float f; uint32_t u; } c;
  c.f = x;
  c.u &= 0x7fffffffu;
  return c.f;
}
