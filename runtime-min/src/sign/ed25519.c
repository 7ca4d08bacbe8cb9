/* kiln_ed25519_verify on libsodium's ref10 code, in runtime-min (signing is in
 * ed25519_sign.c, which only the compiler links). Compiled with libsodium's flags
 * (cmake/ed25519.cmake), so the names below are renamed to ksodium_* like the library's. */
#include "ed25519.h"

#include "crypto_hash_sha512.h"
#include "crypto_sign_ed25519.h"

int kiln_ed25519_verify(const uint8_t sig[KILN_ED25519_SIGNATURE_BYTES], const uint8_t *msg,
                        size_t len, const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES]) {
  return crypto_sign_ed25519_verify_detached(sig, msg, (unsigned long long)len, public_key) == 0
             ? 0
             : -1;
}

void kiln_sha512(uint8_t out[64], const uint8_t *msg, size_t len) {
  crypto_hash_sha512(out, msg, (unsigned long long)len);
}
