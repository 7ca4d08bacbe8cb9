/* kiln_artifact_open: map, verify, bind. Nothing in the file is trusted before it is
 * checked: the preamble first (magic, versions, sizes, header checksum), then the signature
 * trailer (artifact_signature.c; with the app's key, the whole file's signature before the
 * header is parsed), then the header's FlatBuffer bounds, then every section's range,
 * alignment and checksum, then the tables that point into the sections; only then is the
 * code section handed to the loader. */
#include <string.h>

#include "../platform/error.h"
#include "artifact_internal.h"
#include "artifact_schema.h"
#include "kiln/artifact.h"

#define KILN_PAGE_SIZE 4096u

/* libFuzzer builds (tests/fuzz) compute the checksums but do not enforce them, so that
 * mutated inputs reach the header and tables behind them; never defined otherwise. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define KILN_FUZZING 1
#else
#define KILN_FUZZING 0
#endif

static kiln_status_t check_preamble(const kiln_artifact_t *a, kiln_error_t *err) {
  const size_t size = a->map.size;
  if (size < KILN_ARTIFACT_PREAMBLE_SIZE)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "the file is %zu bytes, shorter than the %u-byte preamble (truncated?)",
                          size, KILN_ARTIFACT_PREAMBLE_SIZE);
  kiln_artifact_preamble_t p;
  memcpy(&p, a->map.data, sizeof p);
  if (memcmp(p.magic, KILN_ARTIFACT_MAGIC, 8) != 0)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "not a kiln artifact (bad magic)");
  if (p.format_version != KILN_ARTIFACT_FORMAT_VERSION)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "unsupported artifact format version %u (this runtime reads %u)",
                          p.format_version, KILN_ARTIFACT_FORMAT_VERSION);
  if (p.preamble_size != KILN_ARTIFACT_PREAMBLE_SIZE)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "preamble size %u, expected %u",
                          p.preamble_size, KILN_ARTIFACT_PREAMBLE_SIZE);
  for (size_t i = 0; i < sizeof p.reserved; ++i)
    if (p.reserved[i] != 0)
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "reserved preamble bytes are not zero");
  if (p.file_size != (uint64_t)size)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "the file is %zu bytes but its preamble says %llu (truncated?)", size,
                          (unsigned long long)p.file_size);
  if (p.header_offset < KILN_ARTIFACT_PREAMBLE_SIZE || p.header_offset > size ||
      p.header_size < 8 || p.header_size > size - p.header_offset)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "header range [%llu, +%llu) is outside the %zu-byte file",
                          (unsigned long long)p.header_offset,
                          (unsigned long long)p.header_size, size);
  const uint8_t *h = a->map.data + p.header_offset;
  uint64_t sum = kiln_xxh64(h, p.header_size);
  if (sum != p.header_xxh64 && !KILN_FUZZING)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "header checksum mismatch (xxh64 %016llx, preamble says %016llx)",
                          (unsigned long long)sum, (unsigned long long)p.header_xxh64);
  return KILN_STATUS_OK;
}

static const char *section_name(uint32_t kind) {
  return kind == KILN_SECTION_WEIGHTS ? "weights"
         : kind == KILN_SECTION_CODE  ? "code"
         : kind == KILN_SECTION_GPU   ? "gpu"
                                      : "?";
}

/* One Section table: range, alignment, checksum; records it in a. */
static kiln_status_t check_section(kiln_artifact_t *a, uint32_t i, const kiln_fb_table_t *t,
                                   uint64_t header_end, kiln_error_t *err) {
  uint32_t kind, align;
  uint64_t off, size, sum;
  if (kiln_fb_u32(t, KILN_FB_SECTION_KIND, 0, &kind) ||
      kiln_fb_u64(t, KILN_FB_SECTION_OFFSET, 0, &off) ||
      kiln_fb_u64(t, KILN_FB_SECTION_SIZE, 0, &size) ||
      kiln_fb_u64(t, KILN_FB_SECTION_XXH64, 0, &sum) ||
      kiln_fb_u32(t, KILN_FB_SECTION_ALIGNMENT, 0, &align))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "section %u: malformed table", i);
  if (kind != KILN_SECTION_WEIGHTS && kind != KILN_SECTION_CODE && kind != KILN_SECTION_GPU)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "section %u: unknown kind %u", i, kind);
  const char *name = section_name(kind);
  if ((kind == KILN_SECTION_WEIGHTS && a->weights) || (kind == KILN_SECTION_CODE && a->code) ||
      (kind == KILN_SECTION_GPU && a->gpu))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "section %u: a second %s section", i, name);
  const uint64_t file = a->content_end;
  if (off < header_end || off > file || size > file - off)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "section %u (%s): range [%llu, +%llu) is outside the file's sections "
                          "[%llu, %llu)", i, name, (unsigned long long)off,
                          (unsigned long long)size, (unsigned long long)header_end,
                          (unsigned long long)file);
  if (align < KILN_ARTIFACT_SECTION_ALIGN || (align & (align - 1)) || align > (1u << 30))
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "section %u (%s): alignment %u is not a power of two >= %u", i, name,
                          align, KILN_ARTIFACT_SECTION_ALIGN);
  if (kind == KILN_SECTION_WEIGHTS && align < KILN_PAGE_SIZE)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "section %u (weights): alignment %u, expected a page (%u)", i, align,
                          KILN_PAGE_SIZE);
  if (off % align != 0)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "section %u (%s): offset %llu is not %u-byte aligned", i, name,
                          (unsigned long long)off, align);
  /* A verified signature already covers every byte of the section: no second pass. */
  const int signed_ok = a->info.signature == KILN_SIGNATURE_VERIFIED;
  uint64_t got = signed_ok ? sum : kiln_xxh64(a->map.data + off, size);
  if (got != sum && !KILN_FUZZING)
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "section %u (%s): checksum mismatch (xxh64 %016llx, header says "
                          "%016llx)", i, name, (unsigned long long)got, (unsigned long long)sum);
  if (kind == KILN_SECTION_WEIGHTS) {
    a->weights = a->map.data + off;
    a->weights_size = size;
    a->weights_xxh64 = sum;
  } else if (kind == KILN_SECTION_GPU) { /* read by a GPU backend (kiln/backend.h) */
    a->gpu = a->map.data + off;
    a->gpu_size = size;
  } else {
    a->code = a->map.data + off;
    a->code_size = size;
  }
  return KILN_STATUS_OK;
}

static kiln_status_t check_sections(kiln_artifact_t *a, uint64_t header_end, int module,
                                    kiln_error_t *err) {
  kiln_fb_vector_t v;
  if (kiln_fb_vector(&a->root, KILN_FB_ARTIFACT_SECTIONS, 4, &v))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed section table");
  for (uint32_t i = 0; i < v.count; ++i) {
    kiln_fb_table_t t;
    if (kiln_fb_vec_table(&v, i, &t))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "section %u: malformed table", i);
    KILN_RETURN_IF_ERROR(check_section(a, i, &t, header_end, err));
  }
  if (!a->weights)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "the artifact has no weights section");
  if (!module && (!a->code || a->code_size == 0))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "the artifact has no code section");
  if (module && (a->code || a->gpu))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "a module with a %s section",
                          a->code ? "code" : "gpu");
  return KILN_STATUS_OK;
}

kiln_status_t kiln_loader_verify_container(kiln_artifact_t *a, const uint8_t *public_key,
                                           int module, kiln_error_t *err) {
  KILN_RETURN_IF_ERROR(check_preamble(a, err));
  KILN_RETURN_IF_ERROR(kiln_loader_check_signature(a, public_key, err));
  kiln_artifact_preamble_t p;
  memcpy(&p, a->map.data, sizeof p);
  if (kiln_fb_root(a->map.data + p.header_offset, (size_t)p.header_size, KILN_FB_IDENTIFIER,
                   &a->root))
    return kiln_error_set(err, KILN_STATUS_CORRUPT,
                          "the header is not a FlatBuffer with identifier \"%s\"",
                          KILN_FB_IDENTIFIER);
  uint32_t version;
  if (kiln_fb_u32(&a->root, KILN_FB_ARTIFACT_FORMAT_VERSION, 0, &version))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed root table");
  if (version != KILN_ARTIFACT_FORMAT_VERSION)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "header format version %u (this runtime reads %u)", version,
                          KILN_ARTIFACT_FORMAT_VERSION);
  kiln_fb_table_t m;
  int is_module = 0;
  if (kiln_fb_table(&a->root, KILN_FB_ARTIFACT_MODULE, &m, &is_module))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "header: malformed module table");
  if (is_module != module)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          is_module ? "this file is a kiln module, not a model: open it with "
                                      "kiln_module_open and apply it to a session of its base"
                                    : "this file is a model artifact, not a module");
  KILN_RETURN_IF_ERROR(check_sections(a, p.header_offset + p.header_size, module, err));
  return kiln_loader_read_tensors(a, err);
}

kiln_status_t kiln_loader_verify(kiln_artifact_t *a, const uint8_t *public_key,
                                 kiln_error_t *err) {
  KILN_RETURN_IF_ERROR(kiln_loader_verify_container(a, public_key, 0, err));
  KILN_RETURN_IF_ERROR(kiln_loader_read_target(a, err));
  KILN_RETURN_IF_ERROR(kiln_loader_read_memory_plan(a, err));
  KILN_RETURN_IF_ERROR(kiln_loader_read_config(a, err));
  KILN_RETURN_IF_ERROR(kiln_loader_build_tokenizer(a, err));
  a->info.weights_bytes = a->weights_size;
  a->info.file_bytes = a->map.size;
  a->info.weights_memory = a->map.memory;
  a->info.weights_data = a->weights;
  return KILN_STATUS_OK;
}

/* A program with the model's code linked in runs it only for the artifact it was compiled
 * with: the same weights (the checksum verify() already checked pins model, formats and
 * layout, with no second pass over the bytes) and the same memory plan (the buffers the
 * code indexes). */
static kiln_status_t check_linked(kiln_artifact_t *a, const kiln_linked_model_t *m,
                                  kiln_error_t *err) {
  const kiln_artifact_info_t *i = &a->info;
  if (m->weights_bytes != a->weights_size || m->scratch_bytes != i->scratch_bytes ||
      m->kv_bytes != i->kv_bytes || m->vocab != i->vocab_size || m->max_ctx != i->max_ctx ||
      m->max_batch != i->max_batch || m->weights_xxh64 != a->weights_xxh64)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "this program's linked model code (%.64s, %llu weight bytes, context "
                          "%u) was not compiled with this artifact (%.64s, %llu weight bytes, "
                          "context %u): compile both with the same options",
                          m->target, (unsigned long long)m->weights_bytes, m->max_ctx,
                          i->target_name, (unsigned long long)a->weights_size, i->max_ctx);
  a->forward = m->forward;
  return KILN_STATUS_OK;
}

kiln_artifact_options_t kiln_artifact_options_default(void) {
  kiln_artifact_options_t o;
  o.allocator = NULL;
  o.weights_memory = KILN_WEIGHTS_MAPPED;
  o.public_key = NULL;
  o.prefetch = 0;
  return o;
}

kiln_status_t kiln_artifact_open(const char *path, const kiln_allocator_t *allocator,
                                 kiln_artifact_t **out_artifact, kiln_error_t *out_error) {
  kiln_artifact_options_t o = kiln_artifact_options_default();
  o.allocator = allocator;
  return kiln_artifact_open_with(path, &o, out_artifact, out_error);
}

kiln_status_t kiln_artifact_open_with(const char *path, const kiln_artifact_options_t *options,
                                      kiln_artifact_t **out_artifact,
                                      kiln_error_t *out_error) {
  kiln_error_clear(out_error);
  if (!out_artifact)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "out_artifact is NULL");
  *out_artifact = NULL;
  if (!path)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT, "path is NULL");
  const kiln_artifact_options_t o = options ? *options : kiln_artifact_options_default();
  if (o.weights_memory != KILN_WEIGHTS_MAPPED && o.weights_memory != KILN_WEIGHTS_HUGE_PAGES)
    return kiln_error_set(out_error, KILN_STATUS_INVALID_ARGUMENT,
                          "weights_memory %u is not a kiln_weights_memory_t (0 mapped, "
                          "1 huge pages)", o.weights_memory);
  kiln_allocator_t alloc;
  KILN_RETURN_IF_ERROR(kiln_allocator_resolve(o.allocator, &alloc, out_error));
  kiln_artifact_t *a = kiln_mem_alloc(&alloc, sizeof *a, 64, "the artifact", out_error);
  if (!a)
    return out_error ? out_error->status : KILN_STATUS_OUT_OF_MEMORY;
  memset(a, 0, sizeof *a);
  a->alloc = alloc;
  kiln_status_t st = kiln_platform_map_file(path, o.weights_memory, &a->map, out_error);
  if (st == KILN_STATUS_OK && o.prefetch && a->map.memory == KILN_WEIGHTS_MAPPED)
    kiln_platform_prefetch(a->map.data, a->map.size);
  if (st == KILN_STATUS_OK)
    st = kiln_loader_verify(a, o.public_key, out_error);
  const kiln_linked_model_t *linked = kiln_platform_linked_model();
  if (st == KILN_STATUS_OK && linked) {
    st = check_linked(a, linked, out_error);
  } else if (st == KILN_STATUS_OK) {
    void *entry = NULL;
    st = kiln_platform_load_code(a->code, (size_t)a->code_size, a->entry.data, &a->code_handle,
                                 &entry, out_error);
    /* POSIX guarantees that a dlsym'd object pointer converts to a function pointer. */
    if (st == KILN_STATUS_OK)
      memcpy(&a->forward, &entry, sizeof a->forward);
  }
  if (st != KILN_STATUS_OK) {
    kiln_artifact_close(a);
    return st;
  }
  *out_artifact = a;
  return KILN_STATUS_OK;
}

void kiln_artifact_close(kiln_artifact_t *a) {
  if (!a)
    return;
  kiln_platform_unload_code(a->code_handle);
  kiln_tokenizer_destroy(a->tokenizer);
  kiln_platform_unmap_file(&a->map);
  kiln_allocator_t alloc = a->alloc;
  kiln_mem_free(&alloc, a, sizeof *a);
}

void kiln_artifact_info(const kiln_artifact_t *a, kiln_artifact_info_t *out_info) {
  if (out_info && a)
    *out_info = a->info;
}
