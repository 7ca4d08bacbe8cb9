/* kiln runtime-min: the platform layer. Everything the runtime asks of the operating system
 * goes through these functions: mapping a file, loading code, the clock, the number of
 * cores and the CPU's features. posix.c and code_posix.c implement them for Linux and
 * Android; a freestanding build (bare DSP, emulator) provides its own. Internal. */
#ifndef KILN_PLATFORM_PLATFORM_H_
#define KILN_PLATFORM_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/abi.h"
#include "kiln/kiln.h"

typedef struct kiln_file_map_s {
  const uint8_t *data; /* page-aligned, read-only */
  size_t size;
  uint32_t memory;     /* kiln_weights_memory_t: what data points into */
  void *base;          /* KILN_WEIGHTS_HUGE_PAGES: the anonymous mapping holding data */
  size_t base_size;
  int has_fd;          /* fd is the open file, kept so a session applying modules
                          (kiln/module.h) can map its own copy-on-write view of it */
  int fd;
} kiln_file_map_t;

/* The whole file, read-only (the descriptor stays open until unmapped): mapped (KILN_WEIGHTS_MAPPED) or read into memory that asks
 * for huge pages (KILN_WEIGHTS_HUGE_PAGES, where the platform has it; out_map->memory says
 * which it got). KILN_STATUS_IO_ERROR when the file cannot be opened, mapped or read,
 * KILN_STATUS_OUT_OF_MEMORY when the copy does not fit. */
kiln_status_t kiln_platform_map_file(const char *path, uint32_t memory,
                                     kiln_file_map_t *out_map, kiln_error_t *err);
void kiln_platform_unmap_file(kiln_file_map_t *map);

/* Loads a shared object from memory (an anonymous memfd where the kernel has one, else a
 * temporary file in $TMPDIR that is removed right after loading) and looks up `entry`.
 * KILN_STATUS_UNSUPPORTED with the loader's message when the bytes cannot be loaded or the
 * symbol is missing. */
kiln_status_t kiln_platform_load_code(const uint8_t *code, size_t size, const char *entry,
                                      void **out_handle, void **out_entry, kiln_error_t *err);
void kiln_platform_unload_code(void *handle);
/* Another symbol of loaded code (a `+vulkan` artifact's per-op entries), or NULL. */
void *kiln_platform_code_symbol(void *handle, const char *name);

/* Where there is no dynamic loader (the freestanding Hexagon build), the model's code is
 * linked into the program: `kiln compile --emit=obj` output plus its header, described by
 * freestanding/linked_model.c. The loader then checks the artifact against these facts
 * (same memory plan, same weights checksum) and runs this code instead of its code section.
 * NULL in builds that load code from the artifact. */
typedef struct kiln_linked_model_s {
  kiln_model_forward_fn_t forward;
  uint64_t weights_xxh64; /* the weights section's checksum (KILN_MODEL_WEIGHTS_XXH64) */
  uint64_t weights_bytes;
  uint64_t scratch_bytes;
  uint64_t kv_bytes;
  uint32_t vocab;
  uint32_t max_ctx;
  uint32_t max_batch;
  const char *target;     /* the compile's target name, for messages */
} kiln_linked_model_t;
const kiln_linked_model_t *kiln_platform_linked_model(void);

/* The page size a large buffer may ask for (Linux transparent huge pages: 2 MiB), 0 where
 * the platform has none. */
size_t kiln_platform_huge_page_size(void);
/* Asks the OS to start reading [p, p + size) of a mapped file into the page cache now,
 * without waiting for it (MADV_WILLNEED); nothing where the platform has no such advice. */
void kiln_platform_prefetch(const void *p, size_t size);
/* Advice that [p, p + size) (huge-page aligned, not yet touched) be backed by huge pages;
 * nothing where the platform has none, or when the OS declines. */
void kiln_platform_advise_huge_pages(void *p, size_t size);

/* Monotonic seconds. */
double kiln_platform_now(void);

/* Physical cores this process may run on (hyper-thread siblings counted once), >= 1. */
uint32_t kiln_platform_physical_cores(void);
/* The cores this process may run on, one hardware thread each, fastest first (cpufreq's
 * maximum clock, else arm64's cpu_capacity; ties and unknowns by number): a phone's prime
 * core, then its performance cores, then the efficiency ones. At most cap; returns how
 * many (0 where the platform cannot say). */
uint32_t kiln_platform_cpus_fastest_first(int32_t *out, uint32_t cap);

/* The ISA this runtime was built for, as the first component of an LLVM triple
 * ("x86_64", "aarch64", ...). */
const char *kiln_platform_arch(void);

/* *out_has = 1 when this CPU (and OS) supports the named feature (LLVM's spelling, e.g.
 * "avx2", "avx512vnni", "amx-tile", "dotprod"; a leading '+' is ignored).
 * KILN_STATUS_UNSUPPORTED for a name this runtime does not know. */
kiln_status_t kiln_platform_cpu_has(const char *feature, int *out_has);

#endif /* KILN_PLATFORM_PLATFORM_H_ */
