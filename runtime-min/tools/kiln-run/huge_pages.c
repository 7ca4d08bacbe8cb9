/* How much of the memory holding the weights the kernel backs with 2 MiB pages, from
 * Linux's /proc/self/smaps: a decode step streams every weight once, and with 4 KiB pages
 * that is a TLB miss every 4 KiB, so a bench says which pages it ran on. Without /proc
 * (another OS, the freestanding build) nothing is known and nothing is printed. */
#include <stdio.h>
#include <string.h>

#include "kiln-run.h"

#ifdef KILN_NO_THREADS /* the freestanding build: no /proc, and no sscanf */
int run_huge_pages(const void *addr, uint64_t *out_huge_kib, uint64_t *out_size_kib) {
  (void)addr;
  *out_huge_kib = *out_size_kib = 0;
  return 0;
}
#else
int run_huge_pages(const void *addr, uint64_t *out_huge_kib, uint64_t *out_size_kib) {
  *out_huge_kib = *out_size_kib = 0;
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f)
    return 0;
  const unsigned long long a = (unsigned long long)(uintptr_t)addr;
  char line[512];
  int in = 0, found = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long lo, hi, kib;
    /* a mapping's first line is "lo-hi perms ..."; its fields follow as "Name:  N kB" */
    if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2) {
      if (found)
        break;
      in = a >= lo && a < hi;
      found = in;
      continue;
    }
    if (!in)
      continue;
    if (sscanf(line, "Size: %llu kB", &kib) == 1)
      *out_size_kib = kib;
    else if (sscanf(line, "AnonHugePages: %llu kB", &kib) == 1 ||
             sscanf(line, "FilePmdMapped: %llu kB", &kib) == 1)
      *out_huge_kib += kib;
  }
  fclose(f);
  return found && *out_size_kib > 0;
}
#endif
