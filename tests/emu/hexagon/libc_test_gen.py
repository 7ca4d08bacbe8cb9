#!/usr/bin/env python3
"""Regenerates the expected tables in libc_test.inc from the host's glibc.

Writes a small C program whose every snprintf / strtod / exp / log call is also pasted
into libc_test.inc (as a check macro with the host's result), compiles it with the host
compiler and runs it. The libc test under qemu then makes the same calls and compares.
Usage: libc_test_gen.py > libc_test.inc   (needs cc and glibc on the host)
"""
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

rng = random.Random(12345)


def hexf(x):
    if math.isinf(x):
        return "(-INFINITY)" if x < 0 else "INFINITY"
    if math.isnan(x):
        return "NAN"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    return "(" + float.hex(x) + ")"


def bits_to_float(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


# ---- snprintf calls ----
values = [5.823249123, 0.125, 0.375, 2.5, 3.5, 0.5, 1.5, 1e21, -0.0, 0.0, 1e300, 1e-300,
          5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 0.95, 1e-05, 100000.0,
          1234567.0, 123456789.0, 0.1, 0.3, 2.0 / 3, math.pi, math.e, 1.005, 2.675, 9.9999999,
          99.5, 0.05, 0.0005, 1e15, 1e16, 1e17, 4.35, 1e-7, 3.14159e10, -1.25, -999.9996,
          0.00012345, 999999.5, 9.5, 8.5, 0.045, 1e22, 1e23, 65536.0, 0.999999999, 1e-10,
          123.456, -5.5e-5, 7.0, 1.0 / 3, 1e100, 6.02214076e23]
for _ in range(60):
    values.append(rng.uniform(1, 10) * 10.0 ** rng.randint(-12, 12) * rng.choice([1, -1]))
for _ in range(15):
    values.append(bits_to_float(rng.getrandbits(63)))
fmts = ["%.4f", "%.2f", "%.1f", "%.0f", "%f", "%g", "%.3g", "%.9g", "%e", "%.2e", "%.9e",
        "%.0e", "%G", "%E", "%.1g"]
calls = []
for v in values:
    for f in fmts:
        if f == "%f" and abs(v) > 1e30:
            continue  # long, but fine; keep the table small
        calls.append('"%s", %s' % (f, hexf(v)))
extra = [
    '"%10.3f|%-10.2f|%010.2f|%+.3f|% .2f", 3.14159, 2.5, -1.5, 2.0, 7.25',
    '"%#g|%#.0f|%#.0e|%#x|%#o|%#X", 1.0, 3.0, 5.0, 255, 8, 255',
    '"%12.4e|%-12.3E|%F|%G", 12345.678, 0.000123, 1.5, 1e-20',
    '"%f|%F|%e|%E|%g|%G", INFINITY, -INFINITY, NAN, INFINITY, -INFINITY, NAN',
    '"%5.1f|%-8g|%08.3f|%+08d|%-+5d|", -INFINITY, NAN, INFINITY, 42, 7',
    '"%d|%i|%u|%x|%X|%o|%c|%s|%%", -123, 456, 4000000000u, 0xbeefu, 0xbeefu, 511, 65, "str"',
    '"%hhd|%hhu|%hd|%hu", 300, 300, 70000, 70000',
    '"%ld|%lu|%lld|%llu|%llx", -2147483647L - 1, 4294967295UL, -9223372036854775807LL - 1, '
    '18446744073709551615ULL, 0x123456789abcdefULL',
    '"%zu|%zd|%td|%jd|%ju", (size_t)4000000000u, (ptrdiff_t)-5, (ptrdiff_t)77, (intmax_t)-1, '
    '(uintmax_t)123456789012345ULL',
    '"%5d|%-5d|%05d|%.3d|%5.3d|%-8.5x|%+d|% d", 42, 42, -42, 7, -7, 255, 0, 0',
    '"%*d|%-*d|%.*f|%*.*f|%.*s", 6, 1, 6, 2, 3, 2.71828, 9, 2, 1.005, 3, "abcdef"',
    '"%*d|%.*f", -6, 5, -1, 0.5',
    '"%.0d|%.0x|%#.0o|%5.0d|", 0, 0, 0, 0',
    '"[%s][%10s][%-10s][%.2s][%c%c]", "", "right", "left", "cut", \'x\', \'y\'',
    '"%.3s|%s", "ab", (char *)0',
    '"%.12f|%.15g|%.17g|%.20e", 0.1, 0.1, 0.1, 0.1',
    '"%.30f", 1e-20',
    '"%.60f", 1.0 / 3',
    '"%.3f|%.3f|%.3f|%.3f", 0.0005, 0.0015, 0.0025, 1.0005',
    '"%g|%g|%g|%g|%g|%g", 1e-4, 1e-5, 123456.0, 1234567.0, 0.0001234, 100.0',
    '"%.0f|%.0f|%.0f|%.0f|%.0f", 0.5, 1.5, 2.5, -0.5, -2.5',
    '"%.2f|%.2f|%.2f", 0.125, 0.135, -0.125',
    '"%f", 1e21',
    '"%.3e|%.3e", 9.9995, 9.9996',
    '"%e|%g", 1e-310, 1e-310',
]
calls += extra

# ---- strtod inputs ----
strs = ["0.95", "1e-3", "256", "0", "-0", "1", "-1.5", "3.14159265358979323846", "1e308",
        "1.7976931348623157e308", "2.2250738585072014e-308", "4.9406564584124654e-324",
        "1e-320", "123456789012345678901234567890", "0.1", "0.2", "0.3", "2.5e-7", ".5", "5.",
        "1E+10", "6.02214076e23", "1.6e-19", "9007199254740993", "0.000001", "1e22", "1e23",
        "8.98846567431158e307", "3.4028234663852886e38", "1.17549435e-38", "1e-5",
        "0.0000000000000000000000000001", "7.2057594037927933e16", "12345.6789e-3",
        "  42.5", "+17.25", "1e0", "100000000000000000000000"]
for _ in range(80):
    x = rng.uniform(1, 10) * 10.0 ** rng.randint(-300, 300)
    strs.append(repr(x))
    strs.append("%.6g" % x)

# ---- exp / log inputs ----
exp_in = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, -1e-300, 1e-10, 709.0, 709.78, 709.782712893384,
          709.7827128933841, 710.0, -708.0, -708.4, -709.0, -720.0, -740.0, -744.0, -745.0,
          -745.13, -745.1332191019411, -745.1332191019412, -746.0, -1000.0, 1000.0, 0.693147,
          math.log(2), 2 * math.log(2), 10.0, -10.0, 50.0, -50.0, 100.0, 0.3466, -0.3466,
          0.34657359027997264, 1e-20, 3.0]
for _ in range(120):
    exp_in.append(rng.uniform(-745, 709.7))
for _ in range(40):
    exp_in.append(rng.uniform(-2, 2))
log_in = [1.0, 2.0, 0.5, 10.0, math.e, 1e-300, 5e-324, 1e-320, 2.2250738585072014e-308,
          1.7976931348623157e308, 1e300, 0.9999999999999999, 1.0000000000000002, 1.5,
          0.7071067811865476, 1.4142135623730951, 1.4142135623730950, 0.70710678118654746,
          0.95, 1.05, 1e-10, 3.0, 7.0, 1024.0, 1e10]
for _ in range(140):
    log_in.append(rng.uniform(1, 10) * 10.0 ** rng.randint(-307, 307))
for _ in range(30):
    log_in.append(rng.uniform(0.5, 2))
for _ in range(10):
    log_in.append(bits_to_float(rng.getrandbits(52)))  # subnormals

prog = ["#include <stdio.h>", "#include <stdlib.h>", "#include <stdint.h>", "#include <stddef.h>",
        "#include <string.h>", "#include <math.h>",
        "static void esc(const char *s){putchar('\"');for(;*s;++s){if(*s=='\"'||*s=='\\\\')"
        "putchar('\\\\');putchar(*s);}putchar('\"');}",
        "static uint64_t b(double x){uint64_t u;memcpy(&u,&x,8);return u;}",
        "int main(void){ char buf[512];"]
prog.append('puts("/* generated by libc_test_gen.py from the host glibc: do not edit */");')
for c in calls:
    cq = c.replace("\\", "\\\\").replace('"', '\\"')
    prog.append('snprintf(buf, sizeof buf, %s); printf("SNCHECK("); esc(buf); '
                'printf(", %s);\\n");' % (c, cq.replace("%", "%%")))
for s in strs:
    prog.append('printf("STRTOD_CHECK(\\"%s\\", 0x%%016llxull);\\n", '
                '(unsigned long long)b(strtod("%s", 0)));' % (s, s))
for x in exp_in:
    prog.append('printf("EXP_CHECK(%s, 0x%%016llxull);\\n", (unsigned long long)b(exp(%s)));'
                % (hexf(x), hexf(x)))
for x in log_in:
    prog.append('printf("LOG_CHECK(%s, 0x%%016llxull);\\n", (unsigned long long)b(log(%s)));'
                % (hexf(x), hexf(x)))
prog.append("return 0; }")

with tempfile.TemporaryDirectory() as d:
    src, exe = os.path.join(d, "gen.c"), os.path.join(d, "gen")
    with open(src, "w") as f:
        f.write("\n".join(prog) + "\n")
    # -fno-builtin: the host library computes every value, not the compiler's folding
    subprocess.check_call([os.environ.get("CC", "cc"), "-O0", "-fno-builtin", "-std=c11",
                           "-Wno-format", src, "-o", exe, "-lm"])
    sys.stdout.write(subprocess.check_output([exe]).decode())
