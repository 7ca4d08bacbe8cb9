/* Reading and checking the header tables the runtime acts on: Target (ABI version, ISA,
 * CPU features, entry), MemoryPlan, ModelConfig and the tensor table. Every value that
 * later sizes a buffer or offsets a pointer is checked here. */
#include <string.h>

#include "../platform/error.h"
#include "artifact_internal.h"
#include "artifact_schema.h"

static kiln_status_t sub_table(const kiln_artifact_t *a, unsigned slot, const char *name,
                               kiln_fb_table_t *out, kiln_error_t *err) {
  int present;
  if (kiln_fb_table(&a->root, slot, out, &present))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed %s table", name);
  if (!present)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: no %s table", name);
  return KILN_STATUS_OK;
}

/* "x86_64" for "x86_64-unknown-linux-gnu". */
static int triple_matches(const kiln_fb_string_t *triple, const char *arch) {
  size_t n = strlen(arch);
  return triple->len >= n && memcmp(triple->data, arch, n) == 0 &&
         (triple->len == n || triple->data[n] == '-');
}

static kiln_status_t check_features(const kiln_fb_table_t *t, kiln_error_t *err) {
  kiln_fb_vector_t v;
  if (kiln_fb_vector(t, KILN_FB_TARGET_FEATURES, 4, &v))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed target feature list");
  for (uint32_t i = 0; i < v.count; ++i) {
    kiln_fb_string_t f;
    if (kiln_fb_vec_string(&v, i, &f))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed target feature %u", i);
    int has = 0;
    if (kiln_platform_cpu_has(f.data, &has) != KILN_STATUS_OK)
      return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                            "the code requires CPU feature '%.64s', which this runtime does "
                            "not know how to check", f.data);
    if (!has)
      return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                            "the code requires CPU feature '%.64s', which this CPU lacks",
                            f.data);
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_loader_read_target(kiln_artifact_t *a, kiln_error_t *err) {
  kiln_fb_table_t t;
  KILN_RETURN_IF_ERROR(sub_table(a, KILN_FB_ARTIFACT_TARGET, "target", &t, err));
  kiln_fb_string_t name, triple, governor;
  uint32_t abi;
  if (kiln_fb_string(&t, KILN_FB_TARGET_NAME, &name) ||
      kiln_fb_string(&t, KILN_FB_TARGET_TRIPLE, &triple) ||
      kiln_fb_string(&t, KILN_FB_TARGET_GOVERNOR, &governor) ||
      kiln_fb_string(&t, KILN_FB_TARGET_ENTRY, &a->entry) ||
      kiln_fb_u32(&t, KILN_FB_TARGET_ABI_VERSION, 0, &abi))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed target table");
  if (abi != KILN_ABI_VERSION)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "the code was generated for ABI version %u, this runtime implements %u",
                          abi, KILN_ABI_VERSION);
  const char *arch = kiln_platform_arch();
  if (!triple_matches(&triple, arch))
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "the code is for '%.64s', this machine runs %s", triple.data, arch);
  if (a->entry.len == 0)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: the target names no entry point");
  a->info.target_name = name.data;
  a->info.target_triple = triple.data;
  a->info.governor_defaults = governor.data;
  return check_features(&t, err);
}

kiln_status_t kiln_loader_read_memory_plan(kiln_artifact_t *a, kiln_error_t *err) {
  kiln_fb_table_t t;
  KILN_RETURN_IF_ERROR(sub_table(a, KILN_FB_ARTIFACT_MEMORY, "memory plan", &t, err));
  kiln_artifact_info_t *i = &a->info;
  if (kiln_fb_u64(&t, KILN_FB_MEMORY_SCRATCH_BYTES, 0, &i->scratch_bytes) ||
      kiln_fb_u64(&t, KILN_FB_MEMORY_KV_BYTES, 0, &i->kv_bytes) ||
      kiln_fb_u64(&t, KILN_FB_MEMORY_KV_BYTES_PER_TOKEN, 0, &i->kv_bytes_per_token) ||
      kiln_fb_u32(&t, KILN_FB_MEMORY_KV_K_FORMAT, 0, &i->kv_k_format) ||
      kiln_fb_u32(&t, KILN_FB_MEMORY_KV_V_FORMAT, 0, &i->kv_v_format) ||
      kiln_fb_u32(&t, KILN_FB_MEMORY_MAX_BATCH, 0, &i->max_batch) ||
      kiln_fb_u32(&t, KILN_FB_MEMORY_MAX_CTX, 0, &i->max_ctx) ||
      kiln_fb_u64(&t, KILN_FB_MEMORY_WEIGHT_BYTES_PER_TOKEN, 0, &i->weight_bytes_per_token))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed memory plan");
  if (i->max_batch < 1 || i->max_ctx < 1)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "memory plan: max_batch %u and max_ctx %u must both be at least 1",
                          i->max_batch, i->max_ctx);
  if (i->max_batch > (1u << 24) || i->max_ctx > (1u << 24))
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "memory plan: max_batch %u / max_ctx %u out of range", i->max_batch,
                          i->max_ctx);
  if (i->scratch_bytes > KILN_MAX_PLAN_BYTES || i->kv_bytes > KILN_MAX_PLAN_BYTES)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "memory plan: scratch %llu / KV cache %llu bytes is absurd",
                          (unsigned long long)i->scratch_bytes,
                          (unsigned long long)i->kv_bytes);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_loader_read_config(kiln_artifact_t *a, kiln_error_t *err) {
  kiln_fb_table_t t;
  KILN_RETURN_IF_ERROR(sub_table(a, KILN_FB_ARTIFACT_CONFIG, "model config", &t, err));
  kiln_artifact_info_t *i = &a->info;
  kiln_fb_string_t arch;
  if (kiln_fb_string(&t, KILN_FB_CONFIG_ARCH, &arch) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_VOCAB_SIZE, 0, &i->vocab_size) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_DIM, 0, &i->dim) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_NUM_LAYERS, 0, &i->num_layers) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_NUM_HEADS, 0, &i->num_heads) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_NUM_KV_HEADS, 0, &i->num_kv_heads) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_HEAD_DIM, 0, &i->head_dim) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_FFN_DIM, 0, &i->ffn_dim) ||
      kiln_fb_u32(&t, KILN_FB_CONFIG_CONTEXT_LENGTH, 0, &i->context_length))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed model config");
  i->arch = arch.data;
  if (i->vocab_size < 1 || i->vocab_size > (1u << 24))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "model config: vocab_size %u out of range",
                          i->vocab_size);
  if (i->dim < 1 || i->num_layers < 1 || i->num_heads < 1 || i->head_dim < 1 ||
      i->num_kv_heads < 1 || i->num_heads % i->num_kv_heads != 0)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "model config: dim %u, layers %u, heads %u, kv heads %u, head dim %u "
                          "are inconsistent", i->dim, i->num_layers, i->num_heads,
                          i->num_kv_heads, i->head_dim);
  /* The logits buffer is max_batch x vocab floats. */
  if ((uint64_t)i->max_batch * i->vocab_size > KILN_MAX_PLAN_BYTES / sizeof(float))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "max_batch x vocab_size is absurd");
  return KILN_STATUS_OK;
}

kiln_status_t kiln_loader_read_tensors(kiln_artifact_t *a, kiln_error_t *err) {
  kiln_fb_vector_t v;
  if (kiln_fb_vector(&a->root, KILN_FB_ARTIFACT_TENSORS, 4, &v))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed tensor table");
  for (uint32_t i = 0; i < v.count; ++i) {
    kiln_fb_table_t t;
    kiln_fb_string_t name;
    uint64_t off, size, pad;
    if (kiln_fb_vec_table(&v, i, &t) || kiln_fb_string(&t, KILN_FB_TENSOR_NAME, &name) ||
        kiln_fb_u64(&t, KILN_FB_TENSOR_OFFSET, 0, &off) ||
        kiln_fb_u64(&t, KILN_FB_TENSOR_SIZE, 0, &size) ||
        kiln_fb_u64(&t, KILN_FB_TENSOR_PADDING_BYTES, 0, &pad))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed tensor %u", i);
    if (off > a->weights_size || size > a->weights_size - off)
      return kiln_error_set(err, KILN_STATUS_CORRUPT,
                            "tensor '%.64s': bytes [%llu, +%llu) lie outside the %llu-byte "
                            "weights section", name.data, (unsigned long long)off,
                            (unsigned long long)size, (unsigned long long)a->weights_size);
    if (pad > size)
      return kiln_error_set(err, KILN_STATUS_CORRUPT,
                            "tensor '%.64s': %llu padding bytes in a %llu-byte tensor",
                            name.data, (unsigned long long)pad, (unsigned long long)size);
  }
  a->info.num_tensors = v.count;
  return KILN_STATUS_OK;
}
