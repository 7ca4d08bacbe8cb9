/* clock_gettime and time. Hexagon is a 32-bit ABI: clock_gettime64 (syscall 403, a
 * 64-bit timespec) is tried first; kernels or emulators without it (ENOSYS) get the old
 * clock_gettime (113, 32-bit fields). */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "fs.h" /* kiln_fs_syscall */

#define KILN_SYS_CLOCK_GETTIME 113
#define KILN_SYS_CLOCK_GETTIME64 403
#define KILN_ENOSYS 38

int clock_gettime(clockid_t clk, struct timespec *ts) {
  struct {
    int64_t sec, nsec;
  } t64;
  long r = kiln_fs_syscall(KILN_SYS_CLOCK_GETTIME64, clk, (long)&t64, 0, 0, 0, 0);
  if (r == 0) {
    ts->tv_sec = t64.sec;
    ts->tv_nsec = (long)t64.nsec;
    return 0;
  }
  if (r == -KILN_ENOSYS) {
    struct {
      int32_t sec, nsec;
    } t32;
    r = kiln_fs_syscall(KILN_SYS_CLOCK_GETTIME, clk, (long)&t32, 0, 0, 0, 0);
    if (r == 0) {
      ts->tv_sec = t32.sec;
      ts->tv_nsec = t32.nsec;
      return 0;
    }
  }
  errno = (int)-r;
  return -1;
}

time_t time(time_t *out) {
  struct timespec ts;
  const time_t t = clock_gettime(CLOCK_REALTIME, &ts) ? (time_t)-1 : ts.tv_sec;
  if (out)
    *out = t;
  return t;
}
