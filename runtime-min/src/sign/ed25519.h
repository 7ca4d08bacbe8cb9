/* Ed25519 (RFC 8032) for artifact signatures: libsodium's implementation (cmake/ed25519.cmake),
 * behind three calls so nothing else includes its headers. Internal to kiln. */
#ifndef KILN_SIGN_ED25519_H_
#define KILN_SIGN_ED25519_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ED25519_SEED_BYTES 32
#define KILN_ED25519_PUBLIC_KEY_BYTES 32
#define KILN_ED25519_SIGNATURE_BYTES 64

/* 0 when sig is a valid signature of msg[0, len) by public_key; -1 otherwise (including a
 * non-canonical or small-order key or signature, which libsodium rejects). */
int kiln_ed25519_verify(const uint8_t sig[KILN_ED25519_SIGNATURE_BYTES], const uint8_t *msg,
                        size_t len, const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES]);

/* The public key of a secret seed (32 random bytes). */
void kiln_ed25519_public_key(const uint8_t seed[KILN_ED25519_SEED_BYTES],
                             uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES]);

/* Signs msg[0, len) with the key made from seed (deterministic, as RFC 8032). */
void kiln_ed25519_sign(uint8_t sig[KILN_ED25519_SIGNATURE_BYTES], const uint8_t *msg, size_t len,
                       const uint8_t seed[KILN_ED25519_SEED_BYTES]);

#ifdef __cplusplus
}
#endif

#endif /* KILN_SIGN_ED25519_H_ */
