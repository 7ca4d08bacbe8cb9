/* Modules (kiln/module.h): open and check one, apply a set to a session through a
 * copy-on-write view of the base's weights. */
#include "kiln/module.h"

#include <string.h>
#include <sys/mman.h>

#include "../exec/session_internal.h"
#include "../loader/artifact_internal.h"
#include "../loader/artifact_schema.h"
#include "../platform/error.h"
#include "kiln/backend.h"
#include "module_internal.h"

#define KILN_PAGE 4096u

struct kiln_module_s {
  kiln_artifact_t file;        /* the container: map, root, weights (the module's tensors) */
  kiln_fb_string_t kind, name, version;
  uint64_t base_xxh64, base_size, tensor_bytes;
  kiln_fb_vector_t tensors, banned;
};

/* ---- open ------------------------------------------------------------------------ */

static kiln_status_t read_module(kiln_module_t *m, kiln_error_t *err) {
  kiln_fb_table_t t;
  int present = 0;
  if (kiln_fb_table(&m->file.root, KILN_FB_ARTIFACT_MODULE, &t, &present) || !present ||
      kiln_fb_string(&t, KILN_FB_MODULE_KIND, &m->kind) ||
      kiln_fb_string(&t, KILN_FB_MODULE_NAME, &m->name) ||
      kiln_fb_string(&t, KILN_FB_MODULE_VERSION, &m->version) ||
      kiln_fb_u64(&t, KILN_FB_MODULE_BASE_WEIGHTS_XXH64, 0, &m->base_xxh64) ||
      kiln_fb_u64(&t, KILN_FB_MODULE_BASE_WEIGHTS_SIZE, 0, &m->base_size) ||
      kiln_fb_vector(&t, KILN_FB_MODULE_BANNED_TOKENS, 4, &m->banned) ||
      kiln_fb_vector(&m->file.root, KILN_FB_ARTIFACT_TENSORS, 4, &m->tensors))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "module header: malformed module table");
  if (strcmp(m->kind.data, "adapter") && strcmp(m->kind.data, "head") &&
      strcmp(m->kind.data, "filter"))
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "module kind '%.32s' is not one this runtime knows (adapter, head, "
                          "filter)", m->kind.data);
  for (uint32_t i = 0; i < m->banned.count; ++i)
    if (kiln_fb_vec_i32(&m->banned, i) < 0)
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "module bans token id %d",
                            kiln_fb_vec_i32(&m->banned, i));
  for (uint32_t i = 0; i < m->tensors.count; ++i) {
    kiln_fb_table_t r;
    uint64_t size = 0;
    if (kiln_fb_vec_table(&m->tensors, i, &r) || kiln_fb_u64(&r, KILN_FB_TENSOR_SIZE, 0, &size))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "module tensor %u: malformed", i);
    m->tensor_bytes += size;
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_module_open(const char *path, const uint8_t *public_key,
                               const kiln_allocator_t *allocator, kiln_module_t **out,
                               kiln_error_t *err) {
  kiln_error_clear(err);
  if (!out || !path)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL path or out_module");
  *out = NULL;
  kiln_allocator_t alloc;
  KILN_RETURN_IF_ERROR(kiln_allocator_resolve(allocator, &alloc, err));
  kiln_module_t *m = kiln_mem_alloc(&alloc, sizeof *m, 64, "the module", err);
  if (!m)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  memset(m, 0, sizeof *m);
  m->file.alloc = alloc;
  kiln_status_t st = kiln_platform_map_file(path, KILN_WEIGHTS_MAPPED, &m->file.map, err);
  if (st == KILN_STATUS_OK)
    st = kiln_loader_verify_container(&m->file, public_key, 1, err);
  if (st == KILN_STATUS_OK)
    st = read_module(m, err);
  if (st != KILN_STATUS_OK) {
    kiln_error_prefix(err, st, path);
    kiln_module_close(m);
    return st;
  }
  *out = m;
  return KILN_STATUS_OK;
}

void kiln_module_close(kiln_module_t *m) {
  if (!m)
    return;
  kiln_platform_unmap_file(&m->file.map);
  kiln_allocator_t alloc = m->file.alloc;
  kiln_mem_free(&alloc, m, sizeof *m);
}

void kiln_module_info(const kiln_module_t *m, kiln_module_info_t *out) {
  if (!m || !out)
    return;
  memset(out, 0, sizeof *out);
  out->kind = m->kind.data;
  out->name = m->name.data;
  out->version = m->version.data;
  out->base_weights_xxh64 = m->base_xxh64;
  out->base_weights_bytes = m->base_size;
  out->num_tensors = m->tensors.count;
  out->tensor_bytes = m->tensor_bytes;
  out->num_banned = m->banned.count;
  out->file_bytes = m->file.map.size;
  out->signature = m->file.info.signature;
}

/* ---- check ----------------------------------------------------------------------- */

/* One tensor's record, as far as a replacement must match it. */
typedef struct {
  kiln_fb_string_t name;
  uint32_t format;
  uint64_t row_len, stride, offset, size;
  kiln_fb_vector_t shape;
} tensor_rec_t;

static int read_rec(const kiln_fb_vector_t *v, uint32_t i, tensor_rec_t *r) {
  kiln_fb_table_t t;
  return kiln_fb_vec_table(v, i, &t) || kiln_fb_string(&t, KILN_FB_TENSOR_NAME, &r->name) ||
         kiln_fb_u32(&t, KILN_FB_TENSOR_FORMAT, 0, &r->format) ||
         kiln_fb_vector(&t, KILN_FB_TENSOR_SHAPE, 8, &r->shape) ||
         kiln_fb_u64(&t, KILN_FB_TENSOR_PADDED_ROW_LENGTH, 0, &r->row_len) ||
         kiln_fb_u64(&t, KILN_FB_TENSOR_ROW_STRIDE, 0, &r->stride) ||
         kiln_fb_u64(&t, KILN_FB_TENSOR_OFFSET, 0, &r->offset) ||
         kiln_fb_u64(&t, KILN_FB_TENSOR_SIZE, 0, &r->size);
}

static int same_layout(const tensor_rec_t *a, const tensor_rec_t *b) {
  if (a->format != b->format || a->row_len != b->row_len || a->stride != b->stride ||
      a->size != b->size || a->shape.count != b->shape.count)
    return 0;
  for (uint32_t i = 0; i < a->shape.count; ++i)
    if (kiln_fb_vec_u64(&a->shape, i) != kiln_fb_vec_u64(&b->shape, i))
      return 0;
  return 1;
}

/* Module tensor i's record and its base tensor's (by name). */
static kiln_status_t match_tensor(const kiln_module_t *m, const kiln_artifact_t *base,
                                  uint32_t i, tensor_rec_t *mine, tensor_rec_t *theirs,
                                  kiln_error_t *err) {
  kiln_fb_vector_t bt;
  if (read_rec(&m->tensors, i, mine) || kiln_fb_vector(&base->root, KILN_FB_ARTIFACT_TENSORS,
                                                      4, &bt))
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "module tensor %u: malformed", i);
  for (uint32_t j = 0; j < bt.count; ++j) {
    if (read_rec(&bt, j, theirs))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "base tensor %u: malformed", j);
    if (theirs->name.len != mine->name.len || memcmp(theirs->name.data, mine->name.data,
                                                     mine->name.len))
      continue;
    if (!same_layout(mine, theirs))
      return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                            "module '%.64s': tensor '%.64s' is format %u, %llu bytes, but the "
                            "base stores it as format %u, %llu bytes: compile the module "
                            "with the base's options", m->name.data, mine->name.data,
                            mine->format, (unsigned long long)mine->size, theirs->format,
                            (unsigned long long)theirs->size);
    return KILN_STATUS_OK;
  }
  return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                        "module '%.64s' replaces tensor '%.64s', which the base does not have",
                        m->name.data, mine->name.data);
}

kiln_status_t kiln_module_check(const kiln_module_t *m, const kiln_artifact_t *base,
                                kiln_error_t *err) {
  if (!m || !base)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL module or base");
  if (m->base_xxh64 != base->weights_xxh64 || m->base_size != base->weights_size)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "module '%.64s' (%.16s) was compiled for a base whose weights have "
                          "xxh64 %016llx (%llu bytes); this base's are %016llx (%llu bytes)",
                          m->name.data, m->kind.data, (unsigned long long)m->base_xxh64,
                          (unsigned long long)m->base_size,
                          (unsigned long long)base->weights_xxh64,
                          (unsigned long long)base->weights_size);
  for (uint32_t i = 0; i < m->banned.count; ++i)
    if ((uint32_t)kiln_fb_vec_i32(&m->banned, i) >= base->info.vocab_size)
      return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                            "module '%.64s' bans token %d, outside the vocabulary of %u",
                            m->name.data, kiln_fb_vec_i32(&m->banned, i),
                            base->info.vocab_size);
  for (uint32_t i = 0; i < m->tensors.count; ++i) {
    tensor_rec_t mine, theirs;
    KILN_RETURN_IF_ERROR(match_tensor(m, base, i, &mine, &theirs, err));
  }
  return KILN_STATUS_OK;
}

/* ---- apply ----------------------------------------------------------------------- */

typedef struct {
  uint64_t offset, size; /* in the weights section */
} range_t;

/* A session's module state: its view of the weights and what is written into it. */
typedef struct {
  kiln_allocator_t alloc;
  const kiln_artifact_t *base;
  uint8_t *view;   /* NULL: the session reads the artifact's weights */
  size_t view_size;
  int view_copied; /* a full copy (no file to map) rather than a private mapping */
  range_t *ranges; /* the tensors written into view */
  uint32_t n_ranges;
  int32_t *banned;
  uint32_t n_banned;
} state_t;

static void drop_view(state_t *st) {
  if (!st->view)
    return;
  if (st->view_copied)
    kiln_mem_free(&st->alloc, st->view, st->view_size);
  else
    munmap(st->view, st->view_size);
  st->view = NULL;
}

static void state_destroy(void *user) {
  state_t *st = user;
  drop_view(st);
  kiln_mem_free(&st->alloc, st->ranges, (size_t)st->n_ranges * sizeof *st->ranges);
  kiln_mem_free(&st->alloc, st->banned, (size_t)st->n_banned * sizeof *st->banned);
  kiln_allocator_t alloc = st->alloc;
  kiln_mem_free(&alloc, st, sizeof *st);
}

/* A private writable mapping of the artifact's weights: pages are shared with the page
 * cache until written. Without the file (a freestanding build) or mmap, a copy. */
static kiln_status_t make_view(state_t *st, kiln_error_t *err) {
  const kiln_artifact_t *a = st->base;
  st->view_size = (size_t)a->weights_size;
  const uint64_t at = (uint64_t)(a->weights - a->map.data);
  if (a->map.has_fd && at % KILN_PAGE == 0) {
    void *p = mmap(NULL, st->view_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, a->map.fd,
                   (off_t)at);
    if (p != MAP_FAILED) {
      st->view = p;
      st->view_copied = 0;
      return KILN_STATUS_OK;
    }
  }
  st->view = kiln_mem_alloc(&st->alloc, st->view_size, KILN_PAGE, "a copy of the weights", err);
  if (!st->view)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  memcpy(st->view, a->weights, st->view_size);
  st->view_copied = 1;
  return KILN_STATUS_OK;
}

/* Puts the base's bytes back into [r.offset, +r.size) of the view, then drops the whole
 * pages of it from a private mapping: they equal the file again, so the kernel frees the
 * copies and reads the file's pages on the next touch. The copy comes first because the
 * advice is only advice: qemu-user (7.2) ignores MADV_DONTNEED and returns success. */
static void restore(state_t *st, range_t r) {
  const uint64_t lo = r.offset, hi = r.offset + r.size;
  memcpy(st->view + lo, st->base->weights + lo, (size_t)r.size);
  const uint64_t plo = (lo + KILN_PAGE - 1) / KILN_PAGE * KILN_PAGE;
  const uint64_t phi = hi / KILN_PAGE * KILN_PAGE;
  if (!st->view_copied && plo < phi)
    (void)madvise(st->view + plo, (size_t)(phi - plo), MADV_DONTNEED);
}

static kiln_status_t check_set(const kiln_artifact_t *base, const kiln_module_t *const *mods,
                               uint32_t n, uint32_t *out_tensors, uint32_t *out_banned,
                               kiln_error_t *err) {
  *out_tensors = *out_banned = 0;
  for (uint32_t k = 0; k < n; ++k) {
    if (!mods[k])
      return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "module %u is NULL", k);
    KILN_RETURN_IF_ERROR(kiln_module_check(mods[k], base, err));
    *out_tensors += mods[k]->tensors.count;
    *out_banned += mods[k]->banned.count;
    for (uint32_t j = 0; j < k; ++j)
      for (uint32_t a = 0; a < mods[k]->tensors.count; ++a)
        for (uint32_t b = 0; b < mods[j]->tensors.count; ++b) {
          tensor_rec_t x, y;
          if (read_rec(&mods[k]->tensors, a, &x) || read_rec(&mods[j]->tensors, b, &y))
            return kiln_error_set(err, KILN_STATUS_CORRUPT, "module tensor: malformed");
          if (x.name.len == y.name.len && !memcmp(x.name.data, y.name.data, x.name.len))
            return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                                  "modules '%.64s' and '%.64s' both replace tensor '%.64s'",
                                  mods[j]->name.data, mods[k]->name.data, x.name.data);
        }
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_session_apply_modules(kiln_session_t *s, const kiln_module_t *const *mods,
                                         uint32_t n, kiln_error_t *err) {
  kiln_error_clear(err);
  if (!s || (n && !mods))
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL session or modules");
  const kiln_artifact_t *base = kiln_session_artifact(s);
  uint32_t n_tensors, n_banned;
  KILN_RETURN_IF_ERROR(check_set(base, mods, n, &n_tensors, &n_banned, err));
  if (n_tensors && !kiln_session_backend(s)->uses_host_memory) /* its device has a copy */
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "modules that replace tensors are not applied on backend %s yet "
                          "(token bans are)", kiln_session_backend(s)->name);

  kiln_session_modules_t rec = *kiln_session_modules(s);
  state_t *st = rec.user;
  if (!st) {
    kiln_allocator_t alloc;
    KILN_RETURN_IF_ERROR(kiln_allocator_resolve(NULL, &alloc, err));
    st = kiln_mem_alloc(&alloc, sizeof *st, 64, "the session's module state", err);
    if (!st)
      return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
    memset(st, 0, sizeof *st);
    st->alloc = alloc;
    st->base = base;
    rec.user = st;
    rec.destroy = state_destroy;
    kiln_session_set_modules(s, &rec);
  }
  /* Everything that can fail comes before the first byte changes. */
  range_t *ranges = NULL;
  int32_t *banned = NULL;
  if (n_tensors && !(ranges = kiln_mem_alloc(&st->alloc, n_tensors * sizeof *ranges, 8,
                                             "module ranges", err)))
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  if (n_banned && !(banned = kiln_mem_alloc(&st->alloc, n_banned * sizeof *banned, 4,
                                            "module bans", err))) {
    kiln_mem_free(&st->alloc, ranges, n_tensors * sizeof *ranges);
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  }
  if (n_tensors && !st->view) {
    kiln_status_t made = make_view(st, err);
    if (made != KILN_STATUS_OK) {
      kiln_mem_free(&st->alloc, ranges, n_tensors * sizeof *ranges);
      kiln_mem_free(&st->alloc, banned, n_banned * sizeof *banned);
      return made;
    }
  }

  uint32_t r = 0, b = 0;
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t i = 0; i < mods[k]->tensors.count; ++i) {
      tensor_rec_t mine, theirs;
      (void)match_tensor(mods[k], base, i, &mine, &theirs, NULL); /* checked above */
      ranges[r++] = (range_t){theirs.offset, theirs.size};
    }
    for (uint32_t i = 0; i < mods[k]->banned.count; ++i)
      banned[b++] = kiln_fb_vec_i32(&mods[k]->banned, i);
  }
  /* An old tensor the new set rewrites whole (adapters of the same matrices, swapped) is
   * not put back first: one copy instead of two, and no page dropped and faulted again. */
  for (uint32_t i = 0; i < st->n_ranges; ++i) {
    int rewritten = 0;
    for (uint32_t j = 0; j < n_tensors && !rewritten; ++j)
      rewritten = ranges[j].offset == st->ranges[i].offset && ranges[j].size == st->ranges[i].size;
    if (!rewritten)
      restore(st, st->ranges[i]);
  }
  r = 0;
  for (uint32_t k = 0; k < n; ++k)
    for (uint32_t i = 0; i < mods[k]->tensors.count; ++i, ++r) {
      tensor_rec_t mine;
      (void)read_rec(&mods[k]->tensors, i, &mine); /* read once already: cannot fail */
      memcpy(st->view + ranges[r].offset, mods[k]->file.weights + mine.offset,
             (size_t)mine.size);
    }
  kiln_mem_free(&st->alloc, st->ranges, (size_t)st->n_ranges * sizeof *st->ranges);
  kiln_mem_free(&st->alloc, st->banned, (size_t)st->n_banned * sizeof *st->banned);
  st->ranges = ranges;
  st->n_ranges = n_tensors;
  st->banned = banned;
  st->n_banned = n_banned;
  if (!n_tensors)
    drop_view(st); /* the base alone again: no private pages kept */
  rec.weights = st->view;
  rec.banned = st->banned;
  rec.n_banned = st->n_banned;
  kiln_session_set_modules(s, &rec);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_module_verify_bytes(const uint8_t *data, size_t size,
                                       const uint8_t *public_key, kiln_error_t *err) {
  kiln_module_t m;
  memset(&m, 0, sizeof m);
  m.file.map.data = data;
  m.file.map.size = size;
  KILN_RETURN_IF_ERROR(kiln_loader_verify_container(&m.file, public_key, 1, err));
  KILN_RETURN_IF_ERROR(read_module(&m, err));
  for (uint32_t i = 0; i < m.tensors.count; ++i) {
    tensor_rec_t r;
    if (read_rec(&m.tensors, i, &r))
      return kiln_error_set(err, KILN_STATUS_CORRUPT, "module tensor %u: malformed", i);
  }
  return KILN_STATUS_OK;
}
