/* A small allocator on mmap, for single-threaded freestanding programs (no locks).
 *
 * Every block carries a 16-byte header in front of the user pointer (so pointers are
 * 16-byte aligned, as malloc's). Requests up to 64 KiB round up to a power-of-two class and
 * come from 1 MiB arenas, reused through one free list per class; larger ones get their own
 * mapping, returned to the kernel on free. aligned_alloc over-allocates and keeps the base
 * pointer in a header of its own. Simple and bounded waste (< 2x for small blocks), which is
 * what loading a model and running tests needs; the generated code itself never allocates. */
#include "fs.h"

#define HDR 16u
#define MIN_CLASS 5u  /* 32-byte blocks */
#define MAX_CLASS 16u /* 64 KiB blocks */
#define ARENA (1u << 20)
#define KIND_SMALL 0x5a11u
#define KIND_LARGE 0x1a26u
#define KIND_ALIGNED 0xa119u

typedef struct hdr_s {
  uint32_t kind;
  uint32_t cls;   /* small: class; aligned: unused */
  size_t size;    /* large: mapped bytes */
  void *base;     /* aligned: the pointer to free */
} hdr_t;
_Static_assert(sizeof(hdr_t) <= HDR, "header fits");

static void *free_list[MAX_CLASS + 1];
static uint8_t *arena_cur, *arena_end;

static hdr_t *header(void *p) { return (hdr_t *)((uint8_t *)p - HDR); }

void *kiln_fs_malloc(size_t size) {
  if (size > ((size_t)1 << MAX_CLASS) - HDR) {
    const size_t len = (size + HDR + 4095) & ~(size_t)4095;
    if (len < size) /* overflow */
      return 0;
    uint8_t *m = kiln_fs_mmap(0, len, KILN_FS_PROT_READ | KILN_FS_PROT_WRITE,
                              KILN_FS_MAP_PRIVATE | KILN_FS_MAP_ANONYMOUS, -1, 0);
    if (m == KILN_FS_MAP_FAILED)
      return 0;
    hdr_t *h = (hdr_t *)m;
    h->kind = KIND_LARGE;
    h->size = len;
    return m + HDR;
  }
  uint32_t cls = MIN_CLASS;
  while (((size_t)1 << cls) < size + HDR)
    ++cls;
  uint8_t *b = free_list[cls];
  if (b) {
    free_list[cls] = *(void **)(b + HDR);
  } else {
    const size_t bytes = (size_t)1 << cls;
    if ((size_t)(arena_end - arena_cur) < bytes) { /* the old arena's rest is dropped */
      uint8_t *m = kiln_fs_mmap(0, ARENA, KILN_FS_PROT_READ | KILN_FS_PROT_WRITE,
                                KILN_FS_MAP_PRIVATE | KILN_FS_MAP_ANONYMOUS, -1, 0);
      if (m == KILN_FS_MAP_FAILED)
        return 0;
      arena_cur = m;
      arena_end = m + ARENA;
    }
    b = arena_cur;
    arena_cur += bytes;
  }
  hdr_t *h = (hdr_t *)b;
  h->kind = KIND_SMALL;
  h->cls = cls;
  return b + HDR;
}

void *kiln_fs_calloc(size_t n, size_t size) {
  if (size && n > (size_t)-1 / size)
    return 0;
  uint8_t *p = kiln_fs_malloc(n * size);
  if (p)
    for (size_t i = 0; i < n * size; ++i)
      p[i] = 0;
  return p;
}

void *kiln_fs_aligned_alloc(size_t align, size_t size) {
  if (align <= HDR)
    return kiln_fs_malloc(size);
  uint8_t *base = kiln_fs_malloc(size + align + HDR);
  if (!base)
    return 0;
  uint8_t *p = (uint8_t *)(((uintptr_t)base + HDR + align - 1) & ~(uintptr_t)(align - 1));
  hdr_t *h = header(p);
  h->kind = KIND_ALIGNED;
  h->base = base;
  return p;
}

size_t kiln_fs_usable_size(void *p) {
  if (!p)
    return 0;
  hdr_t *h = header(p);
  if (h->kind == KIND_ALIGNED) /* what is left of the base block after p */
    return kiln_fs_usable_size(h->base) - (size_t)((uint8_t *)p - (uint8_t *)h->base);
  if (h->kind == KIND_LARGE)
    return h->size - HDR;
  return ((size_t)1 << h->cls) - HDR;
}

void kiln_fs_free(void *p) {
  if (!p)
    return;
  hdr_t *h = header(p);
  if (h->kind == KIND_ALIGNED) {
    kiln_fs_free(h->base);
  } else if (h->kind == KIND_LARGE) {
    kiln_fs_munmap(h, h->size);
  } else if (h->kind == KIND_SMALL && h->cls >= MIN_CLASS && h->cls <= MAX_CLASS) {
    *(void **)p = free_list[h->cls];
    free_list[h->cls] = h;
  } else {
    kiln_fs_puts(2, "kiln_fs_free: not a pointer from kiln_fs_malloc\n");
    kiln_fs_exit(134);
  }
}
