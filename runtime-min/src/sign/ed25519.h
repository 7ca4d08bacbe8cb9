/* Ed25519 (RFC 8032) and SHA-512 for artifact signatures: libsodium's implementation
 * (cmake/ed25519.cmake), behind four calls so nothing else includes its headers. Internal. */
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

/* SHA-512 of msg[0, len) into out[64] (libsodium's, as Ed25519 itself uses). */
void kiln_sha512(uint8_t out[64], const uint8_t *msg, size_t len);

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
