/* kiln freestanding libc: <inttypes.h>, the printf format macros only (clang's own
 * inttypes.h needs a C library's underneath). Built from the compiler's __*_FMT*__ macros,
 * so they match <stdint.h>'s types on any target. */
#ifndef KILN_LIBC_INTTYPES_H_
#define KILN_LIBC_INTTYPES_H_

#include <stdint.h>

#define PRId8 __INT8_FMTd__
#define PRId16 __INT16_FMTd__
#define PRId32 __INT32_FMTd__
#define PRId64 __INT64_FMTd__
#define PRIi32 __INT32_FMTi__
#define PRIi64 __INT64_FMTi__
#define PRIu8 __UINT8_FMTu__
#define PRIu16 __UINT16_FMTu__
#define PRIu32 __UINT32_FMTu__
#define PRIu64 __UINT64_FMTu__
#define PRIx8 __UINT8_FMTx__
#define PRIx16 __UINT16_FMTx__
#define PRIx32 __UINT32_FMTx__
#define PRIx64 __UINT64_FMTx__
#define PRIX32 __UINT32_FMTX__
#define PRIX64 __UINT64_FMTX__
#define PRIo32 __UINT32_FMTo__
#define PRIo64 __UINT64_FMTo__
#define PRIdPTR __INTPTR_FMTd__
#define PRIuPTR __UINTPTR_FMTu__
#define PRIxPTR __UINTPTR_FMTx__
#define PRIdMAX __INTMAX_FMTd__
#define PRIuMAX __UINTMAX_FMTu__

#endif
