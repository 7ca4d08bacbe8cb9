/* kiln freestanding libc: <errno.h>. A plain global: the freestanding programs are
 * single-threaded. Values are Linux's (asm-generic/errno-base.h). */
#ifndef KILN_LIBC_ERRNO_H_
#define KILN_LIBC_ERRNO_H_

extern int errno;

#define EPERM 1
#define ENOENT 2
#define EINTR 4
#define EIO 5
#define EBADF 9
#define ENOMEM 12
#define EACCES 13
#define EEXIST 17
#define EISDIR 21
#define EINVAL 22
#define EMFILE 24
#define ENOSPC 28
#define EDOM 33
#define ERANGE 34

#endif
