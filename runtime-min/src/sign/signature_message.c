/* The signed message of an artifact (signature_message.h): per-chunk SHA-512 on a pool. */
#include "signature_message.h"

#include <string.h>

#include "../exec/pool.h"
#include "../platform/error.h"
#include "../platform/platform.h"
#include "ed25519.h"
#include "kiln/artifact.h"

#define KILN_SIGNATURE_PREFIX_BYTES 16u

static uint64_t chunk_count(uint64_t size) {
  return (size + KILN_SIGNATURE_CHUNK_BYTES - 1) / KILN_SIGNATURE_CHUNK_BYTES;
}

size_t kiln_signature_message_size(uint64_t size) {
  return KILN_SIGNATURE_PREFIX_BYTES + (size_t)chunk_count(size) * 64u;
}

typedef struct {
  const uint8_t *data;
  uint64_t size;
  uint8_t *digests;
} chunk_job_t;

static void hash_chunks(void *arg, int32_t task, int32_t n_tasks) {
  const chunk_job_t *j = (const chunk_job_t *)arg;
  const uint64_t off = (uint64_t)task * KILN_SIGNATURE_CHUNK_BYTES;
  const uint64_t left = j->size - off;
  kiln_sha512(j->digests + (size_t)task * 64u, j->data + off,
              (size_t)(left < KILN_SIGNATURE_CHUNK_BYTES ? left : KILN_SIGNATURE_CHUNK_BYTES));
}

kiln_status_t kiln_signature_message(const uint8_t *data, uint64_t size, uint32_t threads,
                                     const kiln_allocator_t *alloc, uint8_t *out,
                                     kiln_error_t *err) {
  const uint32_t algorithm = KILN_SIGNATURE_ED25519, chunk = KILN_SIGNATURE_CHUNK_BYTES;
  memcpy(out, KILN_SIGNATURE_MAGIC, 8);
  memcpy(out + 8, &algorithm, 4);
  memcpy(out + 12, &chunk, 4);
  const uint64_t n = chunk_count(size);
  if (n > INT32_MAX)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "%llu signed bytes are too many",
                          (unsigned long long)size);
  chunk_job_t job = {data, size, out + KILN_SIGNATURE_PREFIX_BYTES};
  uint32_t t = threads ? threads : kiln_platform_physical_cores();
  if (t > n)
    t = (uint32_t)n;
  kiln_allocator_t resolved;
  KILN_RETURN_IF_ERROR(kiln_allocator_resolve(alloc, &resolved, err));
  kiln_pool_t *pool = NULL;
  if (t > 1 && kiln_pool_create(t, &resolved, &pool, NULL) != KILN_STATUS_OK)
    pool = NULL; /* no threads to be had: hash on this one */
  if (pool)
    kiln_pool_parallel_for(pool, hash_chunks, &job, (int32_t)n);
  else
    for (uint64_t i = 0; i < n; ++i)
      hash_chunks(&job, (int32_t)i, (int32_t)n);
  kiln_pool_destroy(pool);
  return KILN_STATUS_OK;
}
