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

/* Reads the open file into a fresh anonymous mapping that asks for 2 MiB pages: its start
 * aligned to 2 MiB so the kernel can back every whole 2 MiB with one page, the advice
 * given before the first touch so the read's page faults allocate them. Read-only once
 * filled, like a mapping. */
static kiln_status_t read_into_huge_pages(int fd, const char *path, size_t size,
                                          kiln_file_map_t *m, kiln_error_t *err) {
  const size_t huge = (size_t)2 << 20;
  const size_t body = (size + huge - 1) / huge * huge;
  if (body < size || body + huge < body)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE, "'%s' is too large to copy", path);
  const size_t len = body + huge; /* room to align the start */
  void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY,
                          "cannot allocate %zu bytes to read '%s' into: %s", len, path,
                          strerror(errno));
  uint8_t *p = (uint8_t *)(((uintptr_t)base + huge - 1) & ~(uintptr_t)(huge - 1));
  kiln_platform_advise_huge_pages(p, body);
  for (size_t done = 0; done < size;) {
    const size_t want = size - done < ((size_t)64 << 20) ? size - done : ((size_t)64 << 20);
    const ssize_t n = pread(fd, p + done, want, (off_t)done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : 0;
      munmap(base, len);
      return kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot read '%s' at byte %zu: %s",
                            path, done, e ? strerror(e) : "the file ended early");
    }
    done += (size_t)n;
  }
  (void)mprotect(p, body, PROT_READ);
  m->data = p;
  m->size = size;
  m->memory = KILN_WEIGHTS_HUGE_PAGES;
  m->base = base;
  m->base_size = len;
  return KILN_STATUS_OK;
}

kiln_status_t kiln_platform_map_file(const char *path, uint32_t memory,
                                     kiln_file_map_t *out_map, kiln_error_t *err) {
  memset(out_map, 0, sizeof *out_map);
  out_map->memory = KILN_WEIGHTS_MAPPED;
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
  if (memory == KILN_WEIGHTS_HUGE_PAGES) {
    kiln_status_t s = read_into_huge_pages(fd, path, size, out_map, err);
    if (s != KILN_STATUS_OK)
      close(fd);
    out_map->has_fd = s == KILN_STATUS_OK;
    out_map->fd = fd;
    return s;
  }
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot map '%s': %s", path, strerror(e));
  }
  out_map->data = (const uint8_t *)p;
  out_map->size = size;
  out_map->has_fd = 1;
  out_map->fd = fd;
  return KILN_STATUS_OK;
}

void kiln_platform_unmap_file(kiln_file_map_t *map) {
  if (map->has_fd)
    close(map->fd);
  if (map->base)
    munmap(map->base, map->base_size);
  else if (map->data)
    munmap((void *)map->data, map->size);
  memset(map, 0, sizeof *map);
}

size_t kiln_platform_huge_page_size(void) {
#ifdef MADV_HUGEPAGE
  return (size_t)2 << 20;
#else
  return 0;
#endif
}

void kiln_platform_advise_huge_pages(void *p, size_t size) {
#ifdef MADV_HUGEPAGE
  (void)madvise(p, size, MADV_HUGEPAGE); /* advice only: without THP the pages stay 4 KiB */
#else
  (void)p;
  (void)size;
#endif
}

void kiln_platform_prefetch(const void *p, size_t size) {
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t start = (uintptr_t)p & ~(page - 1);
  (void)madvise((void *)start, size + ((uintptr_t)p - start), MADV_WILLNEED); /* advice */
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

/* A core's top speed as sysfs gives it: cpufreq's maximum (kHz), else arm64's
 * cpu_capacity (0..1024); 0 when neither is there (a VM, a container without /sys). */
static long core_speed(int cpu) {
  static const char *const files[] = {"cpufreq/cpuinfo_max_freq", "cpu_capacity"};
  for (int i = 0; i < 2; ++i) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/%s", cpu, files[i]);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    long v = 0;
    int ok = fscanf(f, "%ld", &v) == 1 && v > 0;
    fclose(f);
    if (ok)
      return v;
  }
  return 0;
}

uint32_t kiln_platform_cpus_fastest_first(int32_t *out, uint32_t cap) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 0;
  long speed[CPU_SETSIZE];
  uint32_t n = 0;
  unsigned char seen[CPU_SETSIZE / 8];
  memset(seen, 0, sizeof seen);
  for (int c = 0; c < CPU_SETSIZE && n < cap; ++c) {
    if (!CPU_ISSET(c, &set))
      continue;
    int key = first_sibling(c); /* one hardware thread per core */
    if (key < 0 || key >= CPU_SETSIZE)
      key = c;
    if (seen[key / 8] & (1u << (key % 8)))
      continue;
    seen[key / 8] |= (unsigned char)(1u << (key % 8));
    out[n] = c;
    speed[c] = core_speed(c);
    ++n;
  }
  for (uint32_t i = 1; i < n; ++i) { /* insertion sort: fastest first, ties by number */
    int32_t c = out[i];
    uint32_t j = i;
    for (; j > 0 && speed[out[j - 1]] < speed[c]; --j)
      out[j] = out[j - 1];
    out[j] = c;
  }
  return n;
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
