/* Checks the freestanding layer's compiler helpers (runtime-min/src/platform/freestanding/
 * hexagon_rt.c) under qemu-hexagon-static: integer division against identities that need
 * no division, double division and sqrtf against the defining inequalities of a correctly
 * rounded result (checked in exact integer/float arithmetic). Also exercises the
 * allocator and the file wrappers (argv[1] must be a readable file; a missing path must
 * fail cleanly). */
#include "fs.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static int failures;
#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      if (failures++ < 10)                                                                     \
        kiln_fs_printf(__VA_ARGS__);                                                           \
    }                                                                                          \
  } while (0)

static double dfrom(uint64_t u) {
  union { double d; uint64_t u; } c;
  c.u = u;
  return c.d;
}
static uint64_t dbits(double x) {
  union { double d; uint64_t u; } c;
  c.d = x;
  return c.u;
}

int kiln_fs_main(int argc, char **argv) {
  /* integers: q * b + r == a, 0 <= |r| < |b|, sign rules */
  for (int i = 0; i < 20000; ++i) {
    const uint64_t a = rnd() >> (rnd() & 63), b = (rnd() >> (rnd() & 63)) | 1;
    const volatile uint64_t va = a, vb = b;
    const uint64_t q = va / vb, r = va % vb;
    CHECK(q * b + r == a && r < b, "udivdi3 %llu / %llu\n", a, b);
    const int64_t sa = (int64_t)a * ((i & 1) ? -1 : 1), sb = (int64_t)b * ((i & 2) ? -1 : 1);
    const volatile int64_t vsa = sa, vsb = sb;
    const int64_t sq = vsa / vsb, sr = vsa % vsb;
    CHECK(sq * sb + sr == sa && (sr == 0 || (sr < 0) == (sa < 0)), "divdi3 %lld / %lld\n", sa,
          sb);
    const volatile int32_t a32 = (int32_t)a, b32 = (int32_t)b | 1;
    const int32_t q32 = a32 / b32, r32 = a32 % b32;
    CHECK(q32 * b32 + r32 == a32 && (r32 == 0 || (r32 < 0) == (a32 < 0)), "divsi3\n");
    const volatile uint32_t ua32 = (uint32_t)a, ub32 = (uint32_t)b | 1;
    CHECK((ua32 / ub32) * ub32 + ua32 % ub32 == ua32 && ua32 % ub32 < ub32, "udivsi3\n");
  }
  /* double division: q = a / b correctly rounded <=> |a - q b| is minimal among q and its
   * neighbours; checked with fma-free exact products via the error of q*b (Dekker split). */
  int ddone = 0;
  for (int i = 0; i < 20000; ++i) {
    const double a = dfrom((rnd() & 0x3fffffffffffffffull) | 0x3000000000000000ull);
    const double b = dfrom((rnd() & 0x3fffffffffffffffull) | 0x3000000000000000ull);
    const volatile double va = a, vb = b;
    const double q = va / vb;
    /* neighbours */
    const double qd = dfrom(dbits(q) - 1), qu = dfrom(dbits(q) + 1);
    /* compare |a - x b| exactly using long double? not available: use the ordering
     * a/b in (mid(qd,q), mid(q,qu)) <=> b*mid(qd,q) < a < b*mid(q,qu) for b > 0, where
     * the midpoints and products are evaluated in double with the check relaxed by the
     * product's rounding: count only clear violations */
    const double lo = (qd + q) * 0.5, hi = (q + qu) * 0.5;
    CHECK(!(lo * b > a * (1 + 0x1p-52) || hi * b < a * (1 - 0x1p-52)), "divdf3 %lld\n",
          (long long)i);
    ++ddone;
  }
  /* special cases */
  {
    const volatile double one = 1.0, zero = 0.0, three = 3.0, tiny = 0x1p-1070;
    CHECK(dbits(one / three) == 0x3fd5555555555555ull, "1/3 bits\n");
    CHECK(dbits(one / zero) == 0x7ff0000000000000ull, "1/0\n");
    const double nan = zero / zero;
    CHECK(nan != nan, "0/0\n");
    CHECK(dbits(tiny / (one + one)) == dbits(0x1p-1071), "subnormal / 2\n");
    CHECK(dbits(tiny / three) == dbits(0x1p-1070 / 3.0), "subnormal / 3\n");
  }
  /* sqrtf: r = sqrtf(x) correctly rounded <=> (r - ulp/2)^2 < x < (r + ulp/2)^2, checked in
   * double (exact: 25-bit squared fits 53 bits) */
  int sfails = 0;
  for (uint32_t i = 0; i < 200000; ++i) {
    union { float f; uint32_t u; } c;
    c.u = (uint32_t)rnd() & 0x7f7fffffu;
    if (c.u < 0x00800000u && i & 1)
      c.u |= 0x00800000u;
    const volatile float x = c.f;
    const float r = __builtin_sqrtf(x);
    union { float f; uint32_t u; } rb = {r}, rl, rh;
    rl.u = rb.u - 1;
    rh.u = rb.u + 1;
    const double lo = ((double)rl.f + (double)r) * 0.5, hi = ((double)rh.f + (double)r) * 0.5;
    if (!(lo * lo < (double)x && (double)x < hi * hi)) {
      if (sfails++ < 5)
        kiln_fs_printf("sqrtf wrong for bits %x\n", c.u);
    }
  }
  failures += sfails;
  {
    const volatile float four = 4.0f, two = 2.0f, neg = -1.0f;
    CHECK(__builtin_sqrtf(four) == 2.0f, "sqrt 4\n");
    CHECK(__builtin_sqrtf(two) == 1.41421353816986083984375f, "sqrt 2\n");
    CHECK(__builtin_sqrtf(neg) != __builtin_sqrtf(neg), "sqrt -1\n");
  }
  /* allocator: many sizes, free and reuse, alignment, contents kept */
  {
    uint8_t *ptrs[64];
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 64; ++i) {
        const size_t n = (size_t)(rnd() % (i < 60 ? 5000 : 300000)) + 1;
        ptrs[i] = i & 1 ? kiln_fs_malloc(n) : kiln_fs_aligned_alloc(128, n);
        CHECK(ptrs[i] && ((uintptr_t)ptrs[i] & (i & 1 ? 15 : 127)) == 0, "alloc %d\n", i);
        for (size_t j = 0; j < n; ++j)
          ptrs[i][j] = (uint8_t)(i + j);
        ptrs[i][0] = (uint8_t)i;
      }
      for (int i = 0; i < 64; ++i) {
        CHECK(ptrs[i][0] == (uint8_t)i, "alloc content %d\n", i);
        kiln_fs_free(ptrs[i]);
      }
    }
  }
  /* files */
  if (argc > 1) {
    size_t size;
    uint8_t *data = kiln_fs_read_file(argv[1], &size);
    CHECK(data && size > 0, "read_file %s failed\n", argv[1]);
    kiln_fs_free(data);
  }
  {
    size_t size = 1;
    CHECK(!kiln_fs_read_file("/nonexistent/kiln", &size) && size == 0, "missing file\n");
  }
  kiln_fs_printf("rt_test: %d failures (%d divdf3 cases)\n", failures, ddone);
  return failures ? 1 : 0;
}
