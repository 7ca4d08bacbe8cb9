/* Freestanding sys/types.h: only what runtime-min's sources include it for (libsodium's
 * SHA-512 includes it and uses size_t). */
#ifndef KILN_FS_SYS_TYPES_H_
#define KILN_FS_SYS_TYPES_H_

#include <stddef.h>

typedef long ssize_t;

#endif /* KILN_FS_SYS_TYPES_H_ */
