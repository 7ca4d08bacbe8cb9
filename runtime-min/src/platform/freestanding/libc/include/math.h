/* kiln freestanding libc: <math.h>. The classification macros use clang builtins (no
 * calls); the functions are math.c's. */
#ifndef KILN_LIBC_MATH_H_
#define KILN_LIBC_MATH_H_

#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define HUGE_VAL (__builtin_huge_val())
#define HUGE_VALF (__builtin_huge_valf())
#define M_E 2.7182818284590452354
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_SQRT2 1.41421356237309504880

#define isfinite(x) __builtin_isfinite(x)
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define signbit(x) __builtin_signbit(x)

double exp(double x);
double log(double x);
double sqrt(double x);
double floor(double x);
double ceil(double x);
double fabs(double x);
double pow(double x, double y);
float expf(float x);
float logf(float x);
float sqrtf(float x);
float floorf(float x);
float ceilf(float x);
float fabsf(float x);
float powf(float x, float y);

#endif
