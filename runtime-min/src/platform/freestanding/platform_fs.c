/* runtime-min's platform layer (../platform.h) on the freestanding layer, for statically
 * linked Hexagon Linux programs: the artifact is mapped with mmap2, the model's code is the
 * one linked into the program (no dynamic loader: kiln_platform_load_code refuses), one
 * core, and the clock comes from clock_gettime64. */
#include "../platform.h"

#include <string.h>

#include "../error.h"
#include "fs.h"

#define SYS_LLSEEK 62           /* 32-bit ABIs: (fd, off_hi, off_lo, loff_t *, whence) */
#define SYS_CLOCK_GETTIME64 403 /* 64-bit time_t on 32-bit ABIs */
#define CLOCK_MONOTONIC_ 1
#define SEEK_END_ 2

/* Always mapped: a DSP program has no transparent huge pages to ask for. */
kiln_status_t kiln_platform_map_file(const char *path, uint32_t memory,
                                     kiln_file_map_t *out_map, kiln_error_t *err) {
  (void)memory;
  memset(out_map, 0, sizeof *out_map);
  out_map->memory = KILN_WEIGHTS_MAPPED;
  const int fd = kiln_fs_open(path, KILN_FS_O_RDONLY);
  if (fd < 0)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot open '%s' (errno %d)", path, -fd);
  int64_t end = 0;
  const long r = kiln_fs_syscall(SYS_LLSEEK, fd, 0, 0, (long)&end, SEEK_END_, 0);
  if (r < 0 || end < 0 || (uint64_t)end > (uint64_t)(SIZE_MAX / 2)) {
    kiln_fs_close(fd);
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "'%s' is not a regular file of a size "
                          "this 32-bit program can map", path);
  }
  const size_t size = (size_t)end;
  if (size == 0) { /* an empty artifact is caught by the caller */
    kiln_fs_close(fd);
    return KILN_STATUS_OK;
  }
  void *p = kiln_fs_mmap(0, size, KILN_FS_PROT_READ, KILN_FS_MAP_PRIVATE, fd, 0);
  kiln_fs_close(fd);
  if (p == KILN_FS_MAP_FAILED)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "cannot map '%s'", path);
  out_map->data = (const uint8_t *)p;
  out_map->size = size;
  return KILN_STATUS_OK;
}

void kiln_platform_unmap_file(kiln_file_map_t *map) {
  if (map->data)
    kiln_fs_munmap((void *)map->data, map->size);
  memset(map, 0, sizeof *map);
}

kiln_status_t kiln_platform_load_code(const uint8_t *code, size_t size, const char *entry,
                                      void **out_handle, void **out_entry, kiln_error_t *err) {
  *out_handle = NULL;
  *out_entry = NULL;
  return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                        "this freestanding runtime cannot load code; link the model's "
                        "`kiln compile --emit=obj` output into the program");
}

void kiln_platform_unload_code(void *handle) { (void)handle; }

/* Defined by linked_model.c, which the program compiles with the model's header. */
extern const kiln_linked_model_t kiln_linked_model;

const kiln_linked_model_t *kiln_platform_linked_model(void) { return &kiln_linked_model; }

size_t kiln_platform_huge_page_size(void) { return 0; }

void kiln_platform_advise_huge_pages(void *p, size_t size) {
  (void)p;
  (void)size;
}

void kiln_platform_prefetch(const void *p, size_t size) {
  (void)p;
  (void)size;
}

double kiln_platform_now(void) {
  struct {
    int64_t sec;
    int64_t nsec;
  } ts = {0, 0};
  kiln_fs_syscall(SYS_CLOCK_GETTIME64, CLOCK_MONOTONIC_, (long)&ts, 0, 0, 0, 0);
  return (double)ts.sec + (double)ts.nsec * 1e-9;
}

/* One hardware thread: the pool runs tasks on the caller (pool_serial.c). */
uint32_t kiln_platform_physical_cores(void) { return 1; }

uint32_t kiln_platform_cpus_fastest_first(int32_t *out, uint32_t cap) {
  (void)out;
  (void)cap;
  return 0;
}

const char *kiln_platform_arch(void) { return "hexagon"; }
