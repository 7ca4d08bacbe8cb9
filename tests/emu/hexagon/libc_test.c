/* The freestanding C library (runtime-min/src/platform/freestanding/libc) under
 * qemu-hexagon-static, as an ordinary C program with main:
 *   snprintf, strtod, exp and log against the host glibc's results (libc_test.inc, made by
 *   libc_test_gen.py): formatted strings must match exactly, strtod within 1 ulp, exp/log
 *   within 2 ulp; strto* integer round trips and errors; sqrt exactness; qsort; realloc;
 *   fopen/fread of argv[1] and ENOENT for a missing file; fwrite to stdout;
 *   clock_gettime; getenv of KILN_LIBC_TEST (run with -E KILN_LIBC_TEST=hexagon); the
 *   compiler's aligned-memcpy helper.
 * Prints "libc: N checks, 0 failures"; exits non-zero on any failure. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int checks, failures;

#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    ++checks;                                                                                  \
    if (!(cond)) {                                                                             \
      if (failures++ < 30) {                                                                   \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fputc('\n', stderr);                                                                   \
      }                                                                                        \
    }                                                                                          \
  } while (0)

static uint64_t bits(double x) {
  uint64_t u;
  memcpy(&u, &x, 8);
  return u;
}
static double from_bits(uint64_t u) {
  double x;
  memcpy(&x, &u, 8);
  return x;
}

/* distance in ulps between two doubles of the same sign (infinite for NaN mismatches) */
static uint64_t ulps(double a, double b) {
  if (a != a || b != b)
    return (a != a && b != b) ? 0 : UINT64_MAX;
  int64_t ia = (int64_t)bits(a), ib = (int64_t)bits(b);
  if (ia < 0)
    ia = INT64_MIN - ia; /* map to a monotone integer line */
  if (ib < 0)
    ib = INT64_MIN - ib;
  return ia > ib ? (uint64_t)(ia - ib) : (uint64_t)(ib - ia);
}

static char sn_buf[600];
#define SNCHECK(expect, ...)                                                                   \
  do {                                                                                         \
    const int n_ = snprintf(sn_buf, sizeof sn_buf, __VA_ARGS__);                               \
    CHECK(strcmp(sn_buf, expect) == 0 && n_ == (int)strlen(expect),                            \
          "snprintf(%s) = \"%s\", want \"%s\"", #__VA_ARGS__, sn_buf, expect);                 \
  } while (0)
#define STRTOD_CHECK(s, want)                                                                  \
  do {                                                                                         \
    char *e_;                                                                                  \
    const double got_ = strtod(s, &e_);                                                        \
    CHECK(ulps(got_, from_bits(want)) <= 1 && *e_ == 0, "strtod(%s) = %.17g, want %.17g", s,  \
          got_, from_bits(want));                                                              \
    exact_strtod += bits(got_) == (want);                                                      \
  } while (0)
#define EXP_CHECK(x, want)                                                                     \
  do {                                                                                         \
    const double got_ = exp(x);                                                                \
    const uint64_t u_ = ulps(got_, from_bits(want));                                           \
    CHECK(u_ <= 2, "exp(%.17g) = %.17g, want %.17g", (double)(x), got_, from_bits(want));     \
    worst_exp = u_ > worst_exp ? u_ : worst_exp;                                               \
  } while (0)
#define LOG_CHECK(x, want)                                                                     \
  do {                                                                                         \
    const double got_ = log(x);                                                                \
    const uint64_t u_ = ulps(got_, from_bits(want));                                           \
    CHECK(u_ <= 2, "log(%.17g) = %.17g, want %.17g", (double)(x), got_, from_bits(want));     \
    worst_log = u_ > worst_log ? u_ : worst_log;                                               \
  } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static int cmp_u32(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* optnone: two thousand calls with constant arguments take minutes to optimize, and
 * nothing here is worth it */
__attribute__((optnone, noinline)) static void check_tables(void) {
  int exact_strtod = 0;
  uint64_t worst_exp = 0, worst_log = 0;
#include "libc_test.inc"
  printf("libc: strtod exact for %d table inputs; worst exp %u ulp, log %u ulp\n", exact_strtod,
         (unsigned)worst_exp, (unsigned)worst_log);
}

static void check_strto(void) {
  char buf[64], *end;
  for (int i = 0; i < 2000; ++i) {
    const double x = from_bits(rnd() & 0x7fefffffffffffffull) * ((i & 1) ? -1 : 1);
    snprintf(buf, sizeof buf, "%.17g", x);
    CHECK(strtod(buf, &end) == x && *end == 0, "strtod round trip %s", buf);
    const unsigned long long u = rnd() >> (rnd() & 63);
    snprintf(buf, sizeof buf, "%llu", u);
    CHECK(strtoull(buf, &end, 10) == u && *end == 0, "strtoull %s", buf);
    snprintf(buf, sizeof buf, "%#llx", u);
    CHECK(strtoull(buf, &end, 0) == u && *end == 0, "strtoull %s", buf);
    const long l = (long)(int32_t)rnd();
    snprintf(buf, sizeof buf, "%ld", l);
    CHECK(strtol(buf, &end, 10) == l && *end == 0, "strtol %s", buf);
    const long long ll = (long long)rnd();
    snprintf(buf, sizeof buf, "%lld", ll);
    CHECK(strtoll(buf, &end, 10) == ll && *end == 0, "strtoll %s", buf);
  }
  errno = 0;
  CHECK(strtoull("18446744073709551616", &end, 10) == UINT64_MAX && errno == ERANGE,
        "strtoull overflow");
  errno = 0;
  CHECK(strtol("2147483648", &end, 10) == 2147483647L && errno == ERANGE, "strtol overflow");
  errno = 0;
  CHECK(strtol("-2147483649", &end, 10) == -2147483647L - 1 && errno == ERANGE,
        "strtol underflow");
  errno = 0;
  CHECK(strtol("-2147483648", &end, 10) == -2147483647L - 1 && errno == 0, "strtol min");
  errno = 0;
  CHECK(strtoll("9223372036854775808", &end, 10) == INT64_MAX && errno == ERANGE,
        "strtoll overflow");
  CHECK(strtoul("4294967296", &end, 10) == 4294967295UL && errno == ERANGE, "strtoul overflow");
  CHECK(strtol("  -0x1f", &end, 0) == -31 && *end == 0, "strtol hex");
  CHECK(strtol("0755", &end, 0) == 493, "strtol octal");
  CHECK(strtol("z", &end, 36) == 35, "strtol base 36");
  CHECK(strtol("12abc", &end, 10) == 12 && strcmp(end, "abc") == 0, "strtol end");
  const char *junk = "  +x";
  CHECK(strtol(junk, &end, 10) == 0 && end == junk, "strtol no digits");
  CHECK(strtod(junk, &end) == 0 && end == junk, "strtod no digits");
  CHECK(strtoull("0x", &end, 16) == 0 && *end == 'x', "0x without digits");
  CHECK(isinf(strtod("inf", &end)) && *end == 0, "strtod inf");
  CHECK(isinf(strtod("-Infinity", &end)) && strtod("-Infinity", 0) < 0 && *end == 0,
        "strtod -Infinity");
  CHECK(isnan(strtod("nan", &end)) && *end == 0, "strtod nan");
  CHECK(isnan(strtod("NaN(123)x", &end)) && *end == 'x', "strtod nan()");
  errno = 0;
  CHECK(isinf(strtod("1e400", &end)) && errno == ERANGE, "strtod overflow");
  errno = 0;
  CHECK(strtod("1e-400", &end) == 0 && errno == ERANGE, "strtod underflow");
  CHECK(strtod("1.5e", &end) == 1.5 && *end == 'e', "strtod dangling exponent");
  CHECK(strtod("0.95", 0) == 0.95 && strtod("1e-3", 0) == 1e-3 && strtod("256", 0) == 256,
        "strtod basics");
}

static void check_math(void) {
  /* sqrt: correctly rounded <=> r^2 rounds back and neighbours are farther, checked on
   * perfect squares (exact) and by the defining property on random inputs */
  for (int i = 0; i < 3000; ++i) {
    const uint64_t k = rnd() >> 38; /* < 2^26: k^2 exact */
    const double kd = (double)k;
    CHECK(sqrt(kd * kd) == kd, "sqrt(%.17g^2)", kd);
    const double x = from_bits(rnd() & 0x7fefffffffffffffull);
    const double r = sqrt(x);
    /* r correctly rounded iff (r - ulp/2)^2 <= x <= (r + ulp/2)^2; with x scaled into
     * [1,4) the comparison is exact in double-double-free form: use the fact that r*r's
     * error is below ulp: compare against the neighbours' distance instead */
    const double lo = from_bits(bits(r) - 1), hi = from_bits(bits(r) + 1);
    /* |x - r^2| must not exceed |x - lo^2| or |x - hi^2|: compute in long-free exact form
     * via fma-like splitting is overkill here; the relative check below suffices since
     * neighbours differ in r^2 by ~2 ulp(x) */
    const double d0 = fabs(x - r * r), dl = fabs(x - lo * lo), dh = fabs(x - hi * hi);
    CHECK(d0 <= dl && d0 <= dh, "sqrt(%.17g) = %.17g", x, r);
  }
  CHECK(sqrt(2.0) == 1.4142135623730951, "sqrt 2");
  CHECK(sqrt(from_bits(1)) == from_bits(0x1e60000000000000ull), "sqrt(min subnormal)");
  CHECK(isnan(sqrt(-1.0)) && sqrt(-0.0) == 0 && isinf(sqrt(INFINITY)), "sqrt specials");
  CHECK(sqrtf(2.0f) == 1.41421353816986083984375f, "sqrtf");
  CHECK(floor(-1.5) == -2 && floor(1.5) == 1 && floor(-0.25) == -1 && ceil(1.25) == 2 &&
            ceil(-1.5) == -1 && floor(4503599627370495.5) == 4503599627370495.0 &&
            floorf(2.75f) == 2.0f,
        "floor/ceil");
  CHECK(fabs(-3.5) == 3.5 && fabsf(-2.0f) == 2.0f, "fabs");
  CHECK(isinf(log(0.0)) && log(0.0) < 0 && isnan(log(-1.0)) && isinf(exp(1000.0)) &&
            exp(-1000.0) == 0,
        "exp/log specials");
  CHECK(pow(2.0, 10.0) == 1024.0 && pow(-2.0, 3.0) == -8.0 && pow(4.0, 0.5) == 2.0 &&
            pow(10.0, -2.0) == 0.01 && isnan(pow(-2.0, 0.5)) && pow(0.0, -1.0) == HUGE_VAL,
        "pow");
  CHECK(ulps(pow(10000.0, -0.25), 0.1) <= 1 && ulps(pow(1.0001, 10000.0), 2.7181459268249255) <= 4,
        "pow accuracy %.17g %.17g", pow(10000.0, -0.25), pow(1.0001, 10000.0));
  CHECK(expf(1.0f) == 2.71828174591064453125f && logf(2.0f) == 0.693147182464599609375f &&
            powf(2.0f, 0.5f) == 1.41421353816986083984375f,
        "float math");
  CHECK(isfinite(1.0) && !isfinite(INFINITY) && isnan(NAN) && M_PI > 3.14159 &&
            HUGE_VAL > 1e308,
        "classification");
}

static void check_misc(int argc, char **argv) {
  /* qsort */
  enum { N = 3000 };
  uint32_t *a = malloc(N * sizeof *a);
  uint64_t sum = 0, sum2 = 0;
  for (int i = 0; i < N; ++i) {
    a[i] = (uint32_t)rnd() % 1000; /* duplicates */
    sum += a[i];
  }
  qsort(a, N, sizeof *a, cmp_u32);
  int sorted = 1;
  for (int i = 0; i < N; ++i) {
    sum2 += a[i];
    if (i && a[i - 1] > a[i])
      sorted = 0;
  }
  CHECK(sorted && sum == sum2, "qsort");
  /* realloc keeps the contents while growing across size classes and into mmap blocks */
  unsigned char *p = 0;
  size_t have = 0;
  int kept = 1;
  for (size_t n = 1; n < (1u << 21); n = n * 3 + 1) {
    p = realloc(p, n);
    if (!p)
      break;
    for (size_t i = 0; i < have; ++i)
      kept &= p[i] == (unsigned char)(i * 7);
    for (size_t i = have; i < n; ++i)
      p[i] = (unsigned char)(i * 7);
    have = n;
  }
  CHECK(p && kept, "realloc growth");
  p = realloc(p, 10);
  CHECK(p && p[9] == 63, "realloc shrink");
  free(p);
  free(a);
  void *al = 0;
  CHECK(posix_memalign(&al, 256, 1000) == 0 && ((uintptr_t)al & 255) == 0, "posix_memalign");
  free(al);
  al = aligned_alloc(64, 128);
  CHECK(al && ((uintptr_t)al & 63) == 0, "aligned_alloc");
  free(al);
  CHECK(calloc(4, 8) != 0 && abs(-5) == 5, "calloc/abs");

  /* files */
  CHECK(argc > 1, "usage: libc_test.elf <readable file>");
  if (argc > 1) {
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != 0, "fopen(%s): %s", argv[1], strerror(errno));
    if (f) {
      char head[64];
      size_t total = 0, got;
      const size_t first = fread(head, 1, sizeof head, f);
      total += first;
      char chunk[4096];
      while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        total += got;
      CHECK(first > 0 && total >= first && feof(f) && !ferror(f), "fread %u bytes",
            (unsigned)total);
      CHECK(fclose(f) == 0, "fclose");
    }
  }
  errno = 0;
  CHECK(fopen("/nonexistent/kiln-libc-test", "r") == 0 && errno == ENOENT, "ENOENT: %d", errno);
  CHECK(strcmp(strerror(ENOENT), "No such file or directory") == 0, "strerror");
  CHECK(fopen("x", "a") == 0 && errno == EINVAL, "unsupported mode");
  const char msg[] = "libc: fwrite to stdout\n";
  CHECK(fwrite(msg, 1, sizeof msg - 1, stdout) == sizeof msg - 1, "fwrite");
  CHECK(fputs("libc: fputs", stdout) >= 0 && putchar('\n') == '\n' && puts("libc: puts") >= 0 &&
            fflush(stdout) == 0,
        "fputs/puts");

  /* clocks */
  struct timespec t0, t1;
  CHECK(clock_gettime(CLOCK_MONOTONIC, &t0) == 0, "clock_gettime");
  int monotone = 1;
  for (int i = 0; i < 1000; ++i) {
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (t1.tv_sec < t0.tv_sec || (t1.tv_sec == t0.tv_sec && t1.tv_nsec < t0.tv_nsec))
      monotone = 0;
    t0 = t1;
  }
  CHECK(monotone && t0.tv_nsec >= 0 && t0.tv_nsec < 1000000000, "monotonic");
  struct timespec rt;
  CHECK(clock_gettime(CLOCK_REALTIME, &rt) == 0 && rt.tv_sec > 1600000000, "realtime %lld",
        (long long)rt.tv_sec);

  /* environment */
  const char *v = getenv("KILN_LIBC_TEST");
  CHECK(v && strcmp(v, "hexagon") == 0, "getenv(KILN_LIBC_TEST) = %s (run with -E)",
        v ? v : "(null)");
  CHECK(getenv("KILN_LIBC_TEST_ABSENT") == 0 && getenv("KILN_LIBC_TES") == 0, "getenv absent");

  /* clang turns an 8-byte-aligned memcpy of a multiple of 8 bytes (>= 32) into a call to a
   * compiler-rt helper that hexagon_rt.c provides */
  uint64_t src64[32], dst64[32];
  volatile int nblk = 3;
  for (int i = 0; i < 32; ++i)
    src64[i] = rnd(), dst64[i] = 0;
  memcpy(dst64, src64, (size_t)nblk * 64);
  CHECK(memcmp(dst64, src64, 192) == 0 && dst64[24] == 0, "aligned memcpy helper");

  /* string.h */
  const char *s = "hello, world";
  CHECK(strchr(s, 'o') == s + 4 && strrchr(s, 'o') == s + 8 && strchr(s, 0) == s + 12 &&
            strstr(s, "world") == s + 7 && strstr(s, "") == s && !strstr(s, "xyz") &&
            strncmp(s, "help", 3) == 0 && strncmp(s, "help", 4) < 0 && memchr(s, ',', 12) == s + 5,
        "string.h");
}

int main(int argc, char **argv) {
  check_tables();
  check_strto();
  check_math();
  check_misc(argc, argv);
  char big[8];
  CHECK(snprintf(big, sizeof big, "%d-%s", 12345, "abcdef") == 12 && strcmp(big, "12345-a") == 0,
        "snprintf truncation");
  CHECK(snprintf(0, 0, "%.3f", 1.0) == 5, "snprintf size query");
  printf("libc: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
