/* errno and strerror. Messages are glibc's wording for the values errno.h names. */
#include <errno.h>
#include <string.h>

int errno;

char *strerror(int e) {
  switch (e) {
  case 0: return "Success";
  case EPERM: return "Operation not permitted";
  case ENOENT: return "No such file or directory";
  case EINTR: return "Interrupted system call";
  case EIO: return "Input/output error";
  case EBADF: return "Bad file descriptor";
  case ENOMEM: return "Cannot allocate memory";
  case EACCES: return "Permission denied";
  case EEXIST: return "File exists";
  case EISDIR: return "Is a directory";
  case EINVAL: return "Invalid argument";
  case EMFILE: return "Too many open files";
  case ENOSPC: return "No space left on device";
  case EDOM: return "Numerical argument out of domain";
  case ERANGE: return "Numerical result out of range";
  default: return "Unknown error";
  }
}
