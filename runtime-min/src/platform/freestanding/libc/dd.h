/* Double-double arithmetic (a value as an unevaluated sum hi + lo, about 106 bits) for
 * strtod's powers of ten and pow's logarithm. Needs exact IEEE double products and sums
 * (Dekker's split, no FMA): files including it turn FP contraction off. */
#ifndef KILN_LIBC_DD_H_
#define KILN_LIBC_DD_H_

typedef struct dd_s {
  double hi, lo;
} dd_t;

static inline dd_t dd_fast_two_sum(double a, double b) { /* |a| >= |b| */
  const double s = a + b;
  return (dd_t){s, b - (s - a)};
}

static inline dd_t dd_two_sum(double a, double b) {
  const double s = a + b, bb = s - a;
  return (dd_t){s, (a - (s - bb)) + (b - bb)};
}

static inline dd_t dd_two_prod(double a, double b) {
  const double c = 134217729.0; /* 2^27 + 1 splits a double into two 26-bit halves */
  const double p = a * b;
  const double ta = c * a, ah = ta - (ta - a), al = a - ah;
  const double tb = c * b, bh = tb - (tb - b), bl = b - bh;
  return (dd_t){p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

static inline dd_t dd_mul(dd_t a, dd_t b) {
  dd_t p = dd_two_prod(a.hi, b.hi);
  p.lo += a.hi * b.lo + a.lo * b.hi;
  return dd_fast_two_sum(p.hi, p.lo);
}

static inline dd_t dd_sub(dd_t a, dd_t b) {
  dd_t s = dd_two_sum(a.hi, -b.hi);
  s.lo += a.lo - b.lo;
  return dd_fast_two_sum(s.hi, s.lo);
}

static inline dd_t dd_div(dd_t a, dd_t b) { /* three quotient terms by long division */
  const double q1 = a.hi / b.hi;
  dd_t r = dd_sub(a, dd_mul(b, (dd_t){q1, 0}));
  const double q2 = r.hi / b.hi;
  r = dd_sub(r, dd_mul(b, (dd_t){q2, 0}));
  const double q3 = r.hi / b.hi;
  const dd_t q = dd_fast_two_sum(q1, q2);
  return dd_fast_two_sum(q.hi, q.lo + q3);
}

#endif
