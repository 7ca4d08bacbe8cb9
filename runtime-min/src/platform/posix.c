/* The POSIX platform layer (Linux, Android): file mapping, clock, core count. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

kiln_status_t kiln_platform_map_file(const char *path, kiln_file_map_t *out_map,
                                     kiln_error_t *err) {
  out_map->data = NULL;
  out_map->size = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot open '%s': %s", path,
                          strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "'%s' is not a regular file", path);
  }
  if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
    close(fd);
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE, "'%s' is too large to map", path);
  }
  size_t size = (size_t)st.st_size;
  if (size == 0) { /* mmap refuses empty files; an empty artifact is caught by the caller */
    close(fd);
    return KILN_STATUS_OK;
  }
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot map '%s': %s", path, strerror(e));
  out_map->data = (const uint8_t *)p;
  out_map->size = size;
  return KILN_STATUS_OK;
}

void kiln_platform_unmap_file(kiln_file_map_t *map) {
  if (map->data)
    munmap((void *)map->data, map->size);
  map->data = NULL;
  map->size = 0;
}

double kiln_platform_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* First CPU number of /sys/.../cpuN/topology/thread_siblings_list, or -1. */
static int first_sibling(int cpu) {
  char path[96];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
           cpu);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int first = -1;
  if (fscanf(f, "%d", &first) != 1)
    first = -1;
  fclose(f);
  return first;
}

uint32_t kiln_platform_physical_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1u;
  }
  /* A core is counted once: by the lowest-numbered of its hardware threads we may use. */
  uint32_t cores = 0, logical = 0;
  unsigned char seen[CPU_SETSIZE / 8];
  memset(seen, 0, sizeof seen);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set))
      continue;
    ++logical;
    int key = first_sibling(c);
    if (key < 0 || key >= CPU_SETSIZE)
      key = c;
    if (!(seen[key / 8] & (1u << (key % 8)))) {
      seen[key / 8] |= (unsigned char)(1u << (key % 8));
      ++cores;
    }
  }
  if (cores == 0)
    cores = logical;
  return cores ? cores : 1u;
}

const char *kiln_platform_arch(void) {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__hexagon__)
  return "hexagon";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}
