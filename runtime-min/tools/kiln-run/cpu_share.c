/* Where the machine's CPU time went while a benchmark ran, from Linux's /proc/stat and
 * /proc/self/stat (clock ticks): the share the hypervisor took from this VM's CPUs (steal)
 * and the share other processes used, so a slow run on a shared machine says whether it
 * had its cores. Without /proc (another OS, the freestanding build) or without this
 * process's own ticks, nothing is printed. */
#include <stdio.h>
#include <string.h>

#include "kiln-run.h"

/* Reads up to cap - 1 bytes of a small /proc file; 0 when it cannot be read. */
static size_t read_small(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return 0;
  const size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = '\0';
  return n;
}

/* The next unsigned decimal number at or after *p (skipping non-digits), advancing *p;
 * -1 at the end of the string. */
static long long next_number(const char **p) {
  const char *s = *p;
  while (*s && (*s < '0' || *s > '9'))
    ++s;
  if (!*s)
    return -1;
  long long v = 0;
  for (; *s >= '0' && *s <= '9'; ++s)
    v = v * 10 + (*s - '0');
  *p = s;
  return v;
}

void run_cpu_sample(run_cpu_sample_t *out) {
  memset(out, 0, sizeof *out);
  char buf[4096];
  /* "cpu  user nice system idle iowait irq softirq steal ..." (the first line: all CPUs) */
  if (!read_small("/proc/stat", buf, sizeof buf) || strncmp(buf, "cpu ", 4) != 0)
    return;
  const char *p = buf + 4;
  long long f[8];
  for (int i = 0; i < 8; ++i)
    if ((f[i] = next_number(&p)) < 0)
      return;
  out->total = (uint64_t)(f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7]);
  out->busy = (uint64_t)(f[0] + f[1] + f[2] + f[5] + f[6]);
  out->steal = (uint64_t)f[7];
  /* "pid (comm) state ppid ... utime stime": fields 14 and 15, counted after the ')' that
   * ends comm (which may hold spaces) */
  if (!read_small("/proc/self/stat", buf, sizeof buf))
    return;
  p = strrchr(buf, ')');
  if (!p)
    return;
  ++p;
  while (*p == ' ')
    ++p;
  ++p; /* the state letter */
  long long v = 0;
  for (int field = 4; field <= 15; ++field) { /* fields 4 (ppid) .. 15 (stime) */
    if ((v = next_number(&p)) < 0)
      return;
    if (field >= 14)
      out->self += (uint64_t)v;
  }
  out->valid = 1;
}

int run_cpu_share(const run_cpu_sample_t *before, const run_cpu_sample_t *after,
                  double *steal_pct, double *others_pct) {
  /* No own ticks: a run shorter than a tick, or an emulator's /proc (qemu-user reports its
   * guest's utime and stime as 0), where "others" would be everything. */
  if (!before->valid || !after->valid || after->total <= before->total ||
      after->self <= before->self)
    return 0;
  const double total = (double)(after->total - before->total);
  const double busy = (double)(after->busy - before->busy);
  const double self = (double)(after->self - before->self);
  *steal_pct = 100.0 * (double)(after->steal - before->steal) / total;
  *others_pct = busy > self ? 100.0 * (busy - self) / total : 0.0;
  return 1;
}
