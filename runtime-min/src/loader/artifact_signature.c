/* The signature trailer of a .kiln artifact (kiln/artifact.h): checked right after the
 * preamble, before the header is parsed or any code is loaded. With the app's public key,
 * only a file that key signed opens; without one, a signed file opens unchecked (its
 * sections still pass their xxh64) and says so in kiln_artifact_info_t. */
#include <string.h>

#include "../platform/error.h"
#include "../sign/ed25519.h"
#include "../sign/signature_message.h"
#include "artifact_internal.h"
#include "kiln/artifact.h"

/* First 8 bytes of a key in hex, enough to tell keys apart in a message. */
static void key_prefix(const uint8_t *key, char out[17]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 8; ++i) {
    out[2 * i] = hex[key[i] >> 4];
    out[2 * i + 1] = hex[key[i] & 15];
  }
  out[16] = 0;
}

kiln_status_t kiln_loader_check_signature(kiln_artifact_t *a, const uint8_t *public_key,
                                          kiln_error_t *err) {
  kiln_artifact_preamble_t p;
  memcpy(&p, a->map.data, sizeof p);
  a->content_end = p.file_size;
  if (p.signature_offset == 0) {
    if (public_key)
      return kiln_error_set(err, KILN_STATUS_BAD_SIGNATURE,
                            "the artifact is not signed, and this app accepts only artifacts "
                            "signed with its key (kiln compile --sign)");
    return KILN_STATUS_OK;
  }
  const uint64_t header_end = p.header_offset + p.header_size;
  if (p.file_size < KILN_SIGNATURE_TRAILER_SIZE ||
      p.signature_offset != p.file_size - KILN_SIGNATURE_TRAILER_SIZE ||
      p.signature_offset < header_end)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "signature trailer at byte %llu does not end the %llu-byte file",
                          (unsigned long long)p.signature_offset,
                          (unsigned long long)p.file_size);
  kiln_signature_trailer_t t;
  memcpy(&t, a->map.data + p.signature_offset, sizeof t);
  int zero = 1;
  for (size_t i = 0; i < sizeof t.reserved; ++i)
    zero &= t.reserved[i] == 0;
  if (memcmp(t.magic, KILN_SIGNATURE_MAGIC, 8) != 0 ||
      t.trailer_size != KILN_SIGNATURE_TRAILER_SIZE || !zero)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "malformed signature trailer");
  if (t.algorithm != KILN_SIGNATURE_ED25519)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "signature algorithm %u (this runtime knows Ed25519, 1)", t.algorithm);
  a->content_end = p.signature_offset;
  memcpy(a->info.signer_key, t.public_key, sizeof t.public_key);
  if (!public_key) {
    a->info.signature = KILN_SIGNATURE_UNCHECKED;
    return KILN_STATUS_OK;
  }
  char want[17], got[17];
  key_prefix(public_key, want);
  key_prefix(t.public_key, got);
  if (memcmp(t.public_key, public_key, sizeof t.public_key) != 0)
    return kiln_error_set(err, KILN_STATUS_BAD_SIGNATURE,
                          "the artifact is signed by key %s..., not this app's key %s...", got,
                          want);
  const size_t n = kiln_signature_message_size(p.signature_offset);
  uint8_t *msg = kiln_mem_alloc(&a->alloc, n, 64, "the signed message", err);
  if (!msg)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  kiln_status_t st = kiln_signature_message(a->map.data, p.signature_offset, 0, &a->alloc, msg,
                                            err);
  const int bad = st != KILN_STATUS_OK || kiln_ed25519_verify(t.signature, msg, n, public_key);
  kiln_mem_free(&a->alloc, msg, n);
  if (st != KILN_STATUS_OK)
    return st;
  if (bad)
    return kiln_error_set(err, KILN_STATUS_BAD_SIGNATURE,
                          "the signature by key %s... does not match the file: it was changed "
                          "after signing", got);
  a->info.signature = KILN_SIGNATURE_VERIFIED;
  return KILN_STATUS_OK;
}

static int hex_value(char c) {
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

kiln_status_t kiln_public_key_parse(const char *text, size_t len, uint8_t out_key[32],
                                    kiln_error_t *out_error) {
  static const char tag[] = "kiln-ed25519-public-key";
  const size_t tag_len = sizeof tag - 1;
  if (!text || !out_key)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "text or out_key is NULL");
  if (len < tag_len || memcmp(text, tag, tag_len) != 0)
    return kiln_error_set(out_error, KILN_STATUS_CORRUPT,
                          "not a kiln public key (it starts \"%s\"; see kiln keygen)", tag);
  size_t i = tag_len, n = 0;
  while (i < len && (text[i] == '\n' || text[i] == '\r' || text[i] == ' '))
    ++i;
  for (; n < 32 && i + 1 < len; ++n, i += 2) {
    int hi = hex_value(text[i]), lo = hex_value(text[i + 1]);
    if (hi < 0 || lo < 0)
      break;
    out_key[n] = (uint8_t)(hi << 4 | lo);
  }
  while (i < len && (text[i] == '\n' || text[i] == '\r' || text[i] == ' '))
    ++i;
  if (n != 32 || i != len)
    return kiln_error_set(out_error, KILN_STATUS_CORRUPT,
                          "a kiln public key is \"%s\" and then 64 hex digits", tag);
  return KILN_STATUS_OK;
}
