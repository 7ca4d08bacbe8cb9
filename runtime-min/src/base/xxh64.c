/* xxHash64 (seed 0), the artifact format's one checksum. Written from the public
 * specification (Cyan4973/xxHash, doc/xxhash_spec.md); reads bytes with memcpy so any
 * alignment is fine. */
#include <string.h>

#include "kiln/artifact.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t read64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t read32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static uint64_t round64(uint64_t acc, uint64_t lane) {
  acc += lane * P2;
  return rotl(acc, 31) * P1;
}

static uint64_t merge(uint64_t acc, uint64_t v) {
  acc ^= round64(0, v);
  return acc * P1 + P4;
}

uint64_t kiln_xxh64(const void *data, uint64_t size) {
  const uint8_t *p = (const uint8_t *)data, *end = p + size;
  uint64_t h;
  if (size >= 32) {
    uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
    do {
      v1 = round64(v1, read64(p));
      v2 = round64(v2, read64(p + 8));
      v3 = round64(v3, read64(p + 16));
      v4 = round64(v4, read64(p + 24));
      p += 32;
    } while ((uint64_t)(end - p) >= 32);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = P5;
  }
  h += size;
  while ((uint64_t)(end - p) >= 8) {
    h ^= round64(0, read64(p));
    h = rotl(h, 27) * P1 + P4;
    p += 8;
  }
  if ((uint64_t)(end - p) >= 4) {
    h ^= (uint64_t)read32(p) * P1;
    h = rotl(h, 23) * P2 + P3;
    p += 4;
  }
  while (p < end) {
    h ^= (*p++) * P5;
    h = rotl(h, 11) * P1;
  }
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}
