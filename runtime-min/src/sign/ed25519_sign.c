/* kiln_ed25519_public_key and kiln_ed25519_sign on libsodium's ref10 code: the compiler's
 * half (kiln keygen, kiln sign), kept out of runtime-min's core, which only verifies.
 * Compiled with libsodium's flags (cmake/ed25519.cmake). */
#include <string.h>

#include "crypto_hash_sha512.h"
#include "crypto_sign_ed25519.h"
#include "ed25519.h"
#include "private/ed25519_ref10.h"
#include "utils.h"

/* As libsodium's crypto_sign_ed25519_seed_keypair (keypair.c, not compiled: it also holds
 * key conversions that need the rest of the library): A = clamp(SHA-512(seed)[0, 32)) * B. */
void kiln_ed25519_public_key(const uint8_t seed[KILN_ED25519_SEED_BYTES],
                             uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES]) {
  unsigned char h[64];
  ge25519_p3 A;
  crypto_hash_sha512(h, seed, KILN_ED25519_SEED_BYTES);
  h[0] &= 248;
  h[31] &= 127;
  h[31] |= 64;
  ge25519_scalarmult_base(&A, h);
  ge25519_p3_tobytes(public_key, &A);
  sodium_memzero(h, sizeof h);
}

void kiln_ed25519_sign(uint8_t sig[KILN_ED25519_SIGNATURE_BYTES], const uint8_t *msg, size_t len,
                       const uint8_t seed[KILN_ED25519_SEED_BYTES]) {
  unsigned char sk[64]; /* libsodium's secret key: seed, then public key */
  memcpy(sk, seed, KILN_ED25519_SEED_BYTES);
  kiln_ed25519_public_key(seed, sk + KILN_ED25519_SEED_BYTES);
  crypto_sign_ed25519_detached(sig, NULL, msg, (unsigned long long)len, sk);
  sodium_memzero(sk, sizeof sk);
}
