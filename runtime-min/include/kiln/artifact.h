/* kiln runtime-min: the fixed-size preamble of a .kiln artifact and its constants.
 *
 * A .kiln file starts with this 64-byte preamble, then the FlatBuffer header described by
 * runtime-min/schema/artifact.fbs, then 64-byte aligned sections (weights, code). The
 * preamble is checked (magic, version, sizes, header checksum) before any byte of the
 * header is interpreted. Everything is little-endian.
 */
#ifndef KILN_ARTIFACT_H_
#define KILN_ARTIFACT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ARTIFACT_MAGIC "KILNART\0"   /* 8 bytes */
#define KILN_ARTIFACT_FORMAT_VERSION 1u
#define KILN_ARTIFACT_PREAMBLE_SIZE 64u
#define KILN_ARTIFACT_SECTION_ALIGN 64u

typedef enum kiln_section_kind_e {
  KILN_SECTION_WEIGHTS = 0,
  KILN_SECTION_CODE = 1, /* an ELF shared object exporting the ABI entry (kiln/abi.h) */
  KILN_SECTION_GPU = 2,  /* optional: a GPU program (kiln/gpu_program.h) beside the code */
} kiln_section_kind_t;

typedef struct kiln_artifact_preamble_s {
  char magic[8];           /* KILN_ARTIFACT_MAGIC */
  uint32_t format_version; /* KILN_ARTIFACT_FORMAT_VERSION */
  uint32_t preamble_size;  /* 64 */
  uint64_t header_offset;  /* 64 */
  uint64_t header_size;    /* bytes of the FlatBuffer */
  uint64_t header_xxh64;   /* xxHash64 (seed 0) of the FlatBuffer */
  uint64_t file_size;      /* total bytes of the artifact */
  uint64_t signature_offset; /* 0: unsigned; else where the signature trailer starts */
  uint8_t reserved[8];     /* zero */
} kiln_artifact_preamble_t;

#ifdef __cplusplus
static_assert(sizeof(kiln_artifact_preamble_t) == 64, "preamble is 64 bytes");
#else
_Static_assert(sizeof(kiln_artifact_preamble_t) == 64, "preamble is 64 bytes");
#endif

/* A signed artifact ends with this trailer: signature_offset + 128 == file_size. The
 * Ed25519 signature covers bytes [0, signature_offset) - the preamble (its signature_offset
 * and file_size included), the header and every section - so no byte before the trailer
 * can change, and the trailer cannot be cut off without changing the preamble. */
#define KILN_SIGNATURE_MAGIC "KILNSIG\0" /* 8 bytes */
#define KILN_SIGNATURE_ED25519 1u
#define KILN_SIGNATURE_TRAILER_SIZE 128u

typedef struct kiln_signature_trailer_s {
  char magic[8];           /* KILN_SIGNATURE_MAGIC */
  uint32_t algorithm;      /* KILN_SIGNATURE_ED25519 */
  uint32_t trailer_size;   /* 128 */
  uint8_t public_key[32];  /* the signer's Ed25519 public key */
  uint8_t signature[64];   /* Ed25519 over bytes [0, signature_offset) */
  uint8_t reserved[16];    /* zero */
} kiln_signature_trailer_t;

#ifdef __cplusplus
static_assert(sizeof(kiln_signature_trailer_t) == KILN_SIGNATURE_TRAILER_SIZE, "128 bytes");
#else
_Static_assert(sizeof(kiln_signature_trailer_t) == KILN_SIGNATURE_TRAILER_SIZE, "128 bytes");
#endif

/* xxHash64 with seed 0: the one checksum of the artifact format. */
uint64_t kiln_xxh64(const void *data, uint64_t size);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ARTIFACT_H_ */
