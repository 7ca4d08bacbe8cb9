/* kiln freestanding libc: <time.h>. time_t is 64-bit (the time64 syscalls), so it does
 * not end in 2038 on this 32-bit target. */
#ifndef KILN_LIBC_TIME_H_
#define KILN_LIBC_TIME_H_

#include <stddef.h>

typedef long long time_t;
typedef int clockid_t;

struct timespec {
  time_t tv_sec;
  long tv_nsec;
};

#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1

int clock_gettime(clockid_t clk, struct timespec *ts);
time_t time(time_t *out);

#endif
