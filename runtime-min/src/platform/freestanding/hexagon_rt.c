/* The compiler runtime helpers clang calls on Hexagon, which compiler-rt would provide:
 * Hexagon has no integer divide instruction and no double divide/sqrt, so `/` and `%` on
 * 32- and 64-bit integers, double division and sqrtf (rms_norm) become calls to these.
 * Written with shifts and subtracts only: any `/` or `%` in here would call itself.
 * Results are exact (division) and correctly rounded to nearest even (divdf3, sqrtf), as
 * the instructions they stand in for; checked by tests/emu/hexagon/rt_test.c. */
#include <stddef.h>
#include <stdint.h>

/* `used`: linked into the micro-kernel bitcode as well (codegen/cpu/ukernels), where no IR
 * calls them yet - the back end does, after the optimiser would have dropped them. */
#define KILN_RT_HELPER __attribute__((used))

/* Restoring division, one quotient bit per step from the top set bit of n down. */
static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t *rem) {
  if (d == 0) { /* undefined in C; trap like the hardware divide of other ISAs */
    __builtin_trap();
  }
  uint64_t q = 0, r = 0;
  int bit = 63;
  while (bit >= 0 && !((n >> bit) & 1))
    --bit;
  for (; bit >= 0; --bit) {
    r = (r << 1) | ((n >> bit) & 1);
    if (r >= d) {
      r -= d;
      q |= (uint64_t)1 << bit;
    }
  }
  if (rem)
    *rem = r;
  return q;
}

static uint32_t udivmod32(uint32_t n, uint32_t d, uint32_t *rem) {
  uint64_t r64;
  const uint32_t q = (uint32_t)udivmod64(n, d, &r64);
  if (rem)
    *rem = (uint32_t)r64;
  return q;
}

KILN_RT_HELPER uint64_t __hexagon_udivdi3(uint64_t a, uint64_t b) { return udivmod64(a, b, 0); }

KILN_RT_HELPER uint64_t __hexagon_umoddi3(uint64_t a, uint64_t b) {
  uint64_t r;
  udivmod64(a, b, &r);
  return r;
}

/* Signed: C truncates toward zero; the remainder takes the dividend's sign. */
KILN_RT_HELPER int64_t __hexagon_divdi3(int64_t a, int64_t b) {
  const uint64_t ua = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
  const uint64_t ub = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  const uint64_t q = udivmod64(ua, ub, 0);
  return (int64_t)((a < 0) != (b < 0) ? 0 - q : q);
}

KILN_RT_HELPER int64_t __hexagon_moddi3(int64_t a, int64_t b) {
  const uint64_t ua = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
  const uint64_t ub = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  uint64_t r;
  udivmod64(ua, ub, &r);
  return (int64_t)(a < 0 ? 0 - r : r);
}

KILN_RT_HELPER uint32_t __hexagon_udivsi3(uint32_t a, uint32_t b) { return udivmod32(a, b, 0); }

KILN_RT_HELPER uint32_t __hexagon_umodsi3(uint32_t a, uint32_t b) {
  uint32_t r;
  udivmod32(a, b, &r);
  return r;
}

KILN_RT_HELPER int32_t __hexagon_divsi3(int32_t a, int32_t b) {
  const uint32_t ua = a < 0 ? 0u - (uint32_t)a : (uint32_t)a;
  const uint32_t ub = b < 0 ? 0u - (uint32_t)b : (uint32_t)b;
  const uint32_t q = udivmod32(ua, ub, 0);
  return (int32_t)((a < 0) != (b < 0) ? 0u - q : q);
}

KILN_RT_HELPER int32_t __hexagon_modsi3(int32_t a, int32_t b) {
  const uint32_t ua = a < 0 ? 0u - (uint32_t)a : (uint32_t)a;
  const uint32_t ub = b < 0 ? 0u - (uint32_t)b : (uint32_t)b;
  uint32_t r;
  udivmod32(ua, ub, &r);
  return (int32_t)(a < 0 ? 0u - r : r);
}

static uint64_t dbits(double x) {
  union { double d; uint64_t u; } c;
  c.d = x;
  return c.u;
}
static double dfrom(uint64_t u) {
  union { double d; uint64_t u; } c;
  c.u = u;
  return c.d;
}
static uint32_t fbits(float x) {
  union { float f; uint32_t u; } c;
  c.f = x;
  return c.u;
}
static float ffrom(uint32_t u) {
  union { float f; uint32_t u; } c;
  c.u = u;
  return c.f;
}

/* Normalises a finite nonzero double's significand to bit 52 set; returns the unbiased
 * exponent. */
static int dunpack(uint64_t u, uint64_t *m) {
  int e = (int)((u >> 52) & 0x7ff);
  uint64_t f = u & 0xfffffffffffffull;
  if (e == 0) { /* subnormal */
    e = 1;
    while (!(f & (1ull << 52))) {
      f <<= 1;
      --e;
    }
  } else {
    f |= 1ull << 52;
  }
  *m = f;
  return e - 1023;
}

/* Packs sign, unbiased exponent e and a significand m in [2^52, 2^53) with `sticky` extra
 * precision: m carries 2 guard bits below (m in [2^54, 2^55)), rounded to nearest even,
 * with overflow to inf and gradual underflow. */
static double dpack(uint64_t sign, int e, uint64_t m, int sticky) {
  /* m has 2 extra low bits: value = m * 2^(e - 54) */
  int be = e + 1023;
  if (be <= 0) { /* subnormal: shift right keeping sticky */
    const int sh = 1 - be;
    if (sh > 60) {
      sticky |= m != 0;
      m = 0;
    } else {
      sticky |= (m & ((1ull << sh) - 1)) != 0;
      m >>= sh;
    }
    be = 0;
  }
  const uint64_t low = m & 3;
  m >>= 2;
  if (low > 2 || (low == 2 && (sticky || (m & 1))))
    ++m;
  if (be == 0) /* m may have rounded up into the smallest normal: the bit pattern carries */
    return dfrom(sign | m);
  if (m >> 53) {
    m >>= 1;
    ++be;
  }
  if (be >= 0x7ff)
    return dfrom(sign | 0x7ff0000000000000ull);
  return dfrom(sign | ((uint64_t)be << 52) | (m & 0xfffffffffffffull));
}

KILN_RT_HELPER double __hexagon_divdf3(double a, double b) {
  const uint64_t ua = dbits(a), ub = dbits(b);
  const uint64_t sign = (ua ^ ub) & 0x8000000000000000ull;
  const uint64_t aa = ua & 0x7fffffffffffffffull, ab = ub & 0x7fffffffffffffffull;
  const uint64_t inf = 0x7ff0000000000000ull;
  if (aa > inf || ab > inf)
    return dfrom(0x7ff8000000000000ull); /* NaN */
  if (aa == inf)
    return ab == inf ? dfrom(0x7ff8000000000000ull) : dfrom(sign | inf);
  if (ab == inf)
    return dfrom(sign);
  if (ab == 0)
    return aa == 0 ? dfrom(0x7ff8000000000000ull) : dfrom(sign | inf);
  if (aa == 0)
    return dfrom(sign);
  uint64_t ma, mb;
  int e = dunpack(aa, &ma) - dunpack(ab, &mb);
  if (ma < mb) { /* quotient in [1, 2) */
    ma <<= 1;
    --e;
  }
  /* 55 quotient bits (1 + 52 + 2 guard) by long division */
  uint64_t q = 0, r = ma;
  for (int i = 0; i < 55; ++i) {
    q <<= 1;
    if (r >= mb) {
      r -= mb;
      q |= 1;
    }
    r <<= 1;
  }
  return dpack(sign, e, q, r != 0);
}

/* Correctly rounded single-precision square root: integer square root of the significand
 * scaled to an even exponent, bit by bit. */
KILN_RT_HELPER float __hexagon_sqrtf(float x) {
  const uint32_t u = fbits(x);
  if ((u & 0x7fffffffu) == 0)
    return x; /* +-0 */
  if (u >> 31)
    return ffrom(0x7fc00000u); /* negative: NaN */
  if (u >= 0x7f800000u)
    return x; /* inf, NaN */
  int e = (int)(u >> 23);
  uint32_t m = u & 0x7fffffu;
  if (e == 0) {
    e = 1;
    while (!(m & 0x800000u)) {
      m <<= 1;
      --e;
    }
  } else {
    m |= 0x800000u;
  }
  e -= 127;
  uint64_t v = (uint64_t)m << 25; /* value = v * 2^(e - 48); make e - 48 even */
  if (e & 1) {
    v <<= 1;
    --e;
  }
  /* isqrt of v (< 2^50): root < 2^25, so the result has 24-25 bits */
  uint64_t root = 0, rem = 0;
  for (int i = 48; i >= 0; i -= 2) {
    rem = (rem << 2) | ((v >> i) & 3);
    const uint64_t t = (root << 2) | 1;
    root <<= 1;
    if (rem >= t) {
      rem -= t;
      root |= 1;
    }
  }
  /* root in [2^24, 2^25): 1 guard bit; sqrt(value) = root * 2^((e - 48) / 2) */
  int re = (e - 48) / 2 + 24 + 127; /* exponent of the leading bit, biased */
  const uint32_t guard = (uint32_t)(root & 1);
  uint32_t r = (uint32_t)(root >> 1);
  /* a square root is never exactly halfway: round up when the guard bit is set */
  if (guard)
    ++r;
  (void)rem;
  if (r >> 24) {
    r >>= 1;
    ++re;
  }
  return ffrom(((uint32_t)re << 23) | (r & 0x7fffffu));
}
