/* What an artifact's Ed25519 signature signs: not the file's bytes as one stream, which
 * SHA-512 can only hash on one core (about 0.4 GB/s here: seconds for a 1B model), but a
 * short message made of the SHA-512 of each 16 MiB chunk of the signed bytes, hashed on
 * every core at once (docs/artifact-format.md, "Signatures"; docs/perf.md):
 *   "KILNSIG\0" | u32 algorithm (1) | u32 chunk bytes (16 MiB) | SHA-512(chunk i) ...
 * The signer (kiln sign) and the loader build it with the same function. Internal. */
#ifndef KILN_SIGN_SIGNATURE_MESSAGE_H_
#define KILN_SIGN_SIGNATURE_MESSAGE_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_SIGNATURE_CHUNK_BYTES (16u << 20)

/* Bytes of the message for `size` signed bytes. */
size_t kiln_signature_message_size(uint64_t size);

/* Writes the message for data[0, size) into out (kiln_signature_message_size bytes), hashing
 * chunks on `threads` threads (0: the physical cores; a pool is made for the call, from
 * alloc, which may be NULL: malloc). */
kiln_status_t kiln_signature_message(const uint8_t *data, uint64_t size, uint32_t threads,
                                     const kiln_allocator_t *alloc, uint8_t *out,
                                     kiln_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* KILN_SIGN_SIGNATURE_MESSAGE_H_ */
