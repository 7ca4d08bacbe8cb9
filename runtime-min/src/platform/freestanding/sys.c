/* Raw Linux syscalls on Hexagon: trap0(#1) with the number in r6, arguments in r0-r5, the
 * result (or -errno) in r0. Everything else in the freestanding layer goes through here. */
#include "fs.h"

long kiln_fs_syscall(long n, long a0, long a1, long a2, long a3, long a4, long a5) {
  register long r0 __asm__("r0") = a0;
  register long r1 __asm__("r1") = a1;
  register long r2 __asm__("r2") = a2;
  register long r3 __asm__("r3") = a3;
  register long r4 __asm__("r4") = a4;
  register long r5 __asm__("r5") = a5;
  register long r6 __asm__("r6") = n;
  __asm__ volatile("trap0(#1)"
                   : "+r"(r0)
                   : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6)
                   : "memory");
  return r0;
}

long kiln_fs_write(int fd, const void *buf, size_t len) {
  return kiln_fs_syscall(KILN_FS_SYS_WRITE, fd, (long)buf, (long)len, 0, 0, 0);
}

long kiln_fs_read(int fd, void *buf, size_t len) {
  return kiln_fs_syscall(KILN_FS_SYS_READ, fd, (long)buf, (long)len, 0, 0, 0);
}

int kiln_fs_open(const char *path, int flags) {
  return (int)kiln_fs_syscall(KILN_FS_SYS_OPENAT, KILN_FS_AT_FDCWD, (long)path, flags, 0, 0, 0);
}

int kiln_fs_close(int fd) { return (int)kiln_fs_syscall(KILN_FS_SYS_CLOSE, fd, 0, 0, 0, 0, 0); }

void *kiln_fs_mmap(void *addr, size_t len, int prot, int flags, int fd, long offset_pages) {
  const long r = kiln_fs_syscall(KILN_FS_SYS_MMAP, (long)addr, (long)len, prot, flags, fd,
                                 offset_pages);
  /* errors come back as -4095..-1 */
  return (unsigned long)r >= (unsigned long)-4095 ? KILN_FS_MAP_FAILED : (void *)r;
}

int kiln_fs_munmap(void *addr, size_t len) {
  return (int)kiln_fs_syscall(KILN_FS_SYS_MUNMAP, (long)addr, (long)len, 0, 0, 0, 0);
}

void kiln_fs_exit(int code) {
  for (;;) /* exit_group ends every thread; never returns */
    kiln_fs_syscall(KILN_FS_SYS_EXIT_GROUP, code, 0, 0, 0, 0, 0);
}

void *kiln_fs_read_file(const char *path, size_t *out_size) {
  *out_size = 0;
  const int fd = kiln_fs_open(path, KILN_FS_O_RDONLY);
  if (fd < 0)
    return 0;
  size_t cap = 1 << 16, size = 0;
  uint8_t *buf = kiln_fs_malloc(cap);
  for (;;) {
    if (!buf)
      break;
    if (size == cap) { /* grow by doubling: no fstat, so any file (or pipe) works */
      uint8_t *bigger = kiln_fs_malloc(cap * 2);
      if (bigger)
        for (size_t i = 0; i < size; ++i)
          bigger[i] = buf[i];
      kiln_fs_free(buf);
      buf = bigger;
      cap *= 2;
      continue;
    }
    const long got = kiln_fs_read(fd, buf + size, cap - size);
    if (got < 0) {
      kiln_fs_free(buf);
      buf = 0;
      break;
    }
    if (got == 0)
      break;
    size += (size_t)got;
  }
  kiln_fs_close(fd);
  if (buf)
    *out_size = size;
  return buf;
}
