/* kiln runtime-min, freestanding platform layer (Hexagon Linux user mode, no libc).
 *
 * What a statically linked kiln program needs from a C library, on raw Linux syscalls:
 * process entry (start.c), write/exit/open/read/close/mmap (sys.c), the mem* and str*
 * functions compilers emit calls to (string.c), a small allocator on mmap (alloc.c), and
 * the compiler's runtime helpers that compiler-rt would provide (hexagon_rt.c: integer
 * division, double division, sqrtf, an aligned memcpy). The program defines
 *   int kiln_fs_main(int argc, char **argv);
 * and _start calls it and exits with its return value. With the C library on top (libc/),
 * a program may define an ordinary main instead: libc's weak kiln_fs_main calls it and
 * exits through exit(), which flushes stdio. Internal to runtime-min.
 */
#ifndef KILN_PLATFORM_FREESTANDING_FS_H_
#define KILN_PLATFORM_FREESTANDING_FS_H_

#include <stddef.h>
#include <stdint.h>

/* Linux generic syscall numbers (asm-generic/unistd.h), which Hexagon uses. */
#define KILN_FS_SYS_OPENAT 56
#define KILN_FS_SYS_CLOSE 57
#define KILN_FS_SYS_READ 63
#define KILN_FS_SYS_WRITE 64
#define KILN_FS_SYS_EXIT 93
#define KILN_FS_SYS_EXIT_GROUP 94
#define KILN_FS_SYS_MUNMAP 215
#define KILN_FS_SYS_MMAP 222 /* mmap2 on 32-bit ABIs: offset in 4096-byte units */

#define KILN_FS_AT_FDCWD (-100)
#define KILN_FS_O_RDONLY 0
#define KILN_FS_PROT_READ 1
#define KILN_FS_PROT_WRITE 2
#define KILN_FS_MAP_PRIVATE 2
#define KILN_FS_MAP_ANONYMOUS 0x20
#define KILN_FS_MAP_FAILED ((void *)-1)

long kiln_fs_syscall(long n, long a0, long a1, long a2, long a3, long a4, long a5);

/* Thin wrappers; negative returns are -errno, as the kernel gives them. */
long kiln_fs_write(int fd, const void *buf, size_t len);
long kiln_fs_read(int fd, void *buf, size_t len);
int kiln_fs_open(const char *path, int flags); /* openat(AT_FDCWD, ...) */
int kiln_fs_close(int fd);
void *kiln_fs_mmap(void *addr, size_t len, int prot, int flags, int fd, long offset_pages);
int kiln_fs_munmap(void *addr, size_t len);
__attribute__((noreturn)) void kiln_fs_exit(int code);

/* Writes the whole string to fd (loops over short writes); returns 0 or -errno. */
int kiln_fs_puts(int fd, const char *s);
/* Minimal formatted output to fd 1: %d %u %x %s %c %% and %ld/%lld/%llu/%llx,
 * plus %g-like %f with a fixed precision (%.Nf, N <= 9), enough for test reports. */
int kiln_fs_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void *kiln_fs_malloc(size_t size);
void *kiln_fs_calloc(size_t n, size_t size);
void *kiln_fs_aligned_alloc(size_t align, size_t size); /* align a power of two <= 4096 */
void kiln_fs_free(void *p);
/* Bytes usable at p (at least what was asked for); 0 for NULL. For realloc. */
size_t kiln_fs_usable_size(void *p);

/* Reads a whole file into a fresh allocation; NULL (and *out_size 0) when it cannot be
 * opened or read. */
void *kiln_fs_read_file(const char *path, size_t *out_size);

int kiln_fs_main(int argc, char **argv);
/* The environment _start found (NULL-terminated "NAME=VALUE" strings), for getenv. */
extern char **kiln_fs_envp;

/* string.c: the C library's names, since compilers emit calls to them */
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
void *memchr(const void *s, int c, size_t n);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *hay, const char *needle);

#endif /* KILN_PLATFORM_FREESTANDING_FS_H_ */
