/* Reading a GPU program section: every count and index is checked before use, so a
 * corrupt artifact is one error, never a bad dispatch. */
#include <stdlib.h>
#include <string.h>

#include "../../src/platform/error.h"
#include "vk_program.h"

typedef struct {
  const uint32_t *w;
  uint64_t n, at;
} reader_t;

static int next(reader_t *r, uint32_t *out) {
  if (r->at >= r->n)
    return 0;
  *out = r->w[r->at++];
  return 1;
}

#define CORRUPT(...) kiln_error_set(err, KILN_STATUS_CORRUPT, "gpu program: " __VA_ARGS__)

static kiln_status_t read_kernel(reader_t *r, kiln_vk_program_kernel_t *k, uint32_t i,
                                 kiln_error_t *err) {
  uint32_t len = 0, words = 0;
  if (!next(r, &len) || len == 0 || len >= sizeof k->name || r->at + (len + 3) / 4 > r->n)
    return CORRUPT("kernel %u: bad name", i);
  memcpy(k->name, r->w + r->at, len);
  k->name[len] = '\0';
  r->at += (len + 3) / 4;
  /* a variant follows the kernel it replaces, which is no variant itself */
  if (!next(r, &k->replaces) ||
      (k->replaces != KILN_GPU_NO_KERNEL &&
       (k->replaces >= i || k[(int64_t)k->replaces - i].replaces != KILN_GPU_NO_KERNEL)))
    return CORRUPT("kernel %u (%s): bad variant", i, k->name);
  if (!next(r, &words) || words < 5 || words > r->n - r->at)
    return CORRUPT("kernel %u (%s): %u SPIR-V words past the section", i, k->name, words);
  k->words = r->w + r->at;
  k->n_words = words;
  r->at += words;
  return KILN_STATUS_OK;
}

static kiln_status_t read_step(reader_t *r, const kiln_vk_program_t *p, kiln_vk_step_t *s,
                               uint32_t i, kiln_error_t *err) {
  if (!next(r, &s->kernel) || (s->kernel >= p->n_kernels && s->kernel != KILN_GPU_NO_KERNEL))
    return CORRUPT("dispatch %u: no such kernel", i);
  const int cpu = s->kernel == KILN_GPU_NO_KERNEL; /* an op compiled for the CPU only */
  if (!next(r, &s->when) || s->when > KILN_GPU_WHEN_PREFILL)
    return CORRUPT("dispatch %u: bad batch condition", i);
  if (!next(r, &s->op) || (i > 0 && s->op < s[-1].op))
    return CORRUPT("dispatch %u: op out of order", i);
  if (!next(r, &s->n_spec) || s->n_spec > KILN_GPU_MAX_CONSTANTS || (cpu && s->n_spec))
    return CORRUPT("dispatch %u: bad constant count", i);
  for (uint32_t k = 0; k < s->n_spec; ++k)
    if (!next(r, &s->spec[k]))
      return CORRUPT("dispatch %u: truncated", i);
  if (!next(r, &s->n_bind) || (s->n_bind == 0) != cpu || s->n_bind > KILN_GPU_MAX_BINDINGS)
    return CORRUPT("dispatch %u: bad binding count", i);
  for (uint32_t k = 0; k < s->n_bind; ++k)
    if (!next(r, &s->bind[k]) || s->bind[k] >= KILN_GPU_BUF_COUNT)
      return CORRUPT("dispatch %u: binding %u names no buffer", i, k);
  if (!next(r, &s->n_push) || s->n_push > KILN_GPU_MAX_PUSH_WORDS || (cpu && s->n_push))
    return CORRUPT("dispatch %u: bad push word count", i);
  for (uint32_t k = 0; k < s->n_push; ++k) {
    uint32_t a;
    if (!next(r, &a) || !next(r, &s->push[k].b))
      return CORRUPT("dispatch %u: truncated", i);
    s->push[k].a = (int32_t)a;
  }
  for (uint32_t d = 0; d < 3; ++d)
    if (!next(r, &s->groups[d].a) || !next(r, &s->groups[d].b) || !next(r, &s->groups[d].div) ||
        s->groups[d].div == 0)
      return CORRUPT("dispatch %u: bad group count", i);
  uint32_t w[4];
  for (int k = 0; k < 4; ++k)
    if (!next(r, &w[k]))
      return CORRUPT("dispatch %u: truncated", i);
  s->weights_lo = (uint64_t)w[1] << 32 | w[0];
  s->weights_hi = (uint64_t)w[3] << 32 | w[2];
  if (s->weights_hi < s->weights_lo)
    return CORRUPT("dispatch %u: bad weights window", i);
  if (!next(r, &s->n_offsets) || s->n_offsets > s->n_push)
    return CORRUPT("dispatch %u: bad offset word count", i);
  for (uint32_t k = 0; k < s->n_offsets; ++k) {
    uint32_t word;
    if (!next(r, &word) || word >= s->n_push || !next(r, &s->offset_divisor[k]) ||
        s->offset_divisor[k] == 0 || s->offset_divisor[k] > 256)
      return CORRUPT("dispatch %u: bad offset word", i);
    s->offset_word[k] = (uint8_t)word;
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_vk_program_read(const uint8_t *data, uint64_t size, kiln_vk_program_t *p,
                                   kiln_error_t *err) {
  memset(p, 0, sizeof *p);
  if (((uintptr_t)data & 3) || size % 4 != 0)
    return CORRUPT("%llu bytes, not whole aligned words", (unsigned long long)size);
  reader_t r = {(const uint32_t *)data, size / 4, 0};
  uint32_t magic = 0, version = 0, lo = 0, hi = 0, api = 0;
  if (!next(&r, &magic) || magic != KILN_GPU_MAGIC)
    return CORRUPT("bad magic");
  if (!next(&r, &version) || version != KILN_GPU_VERSION)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "gpu program: version %u (this runtime reads %u)", version,
                          KILN_GPU_VERSION);
  if (!next(&r, &p->n_kernels) || !next(&r, &p->n_steps) || !next(&r, &lo) || !next(&r, &hi) ||
      !next(&r, &api))
    return CORRUPT("truncated header");
  if (api != KILN_GPU_API_VULKAN_1_1)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED, "gpu program: API %u is not Vulkan 1.1",
                          api);
  if (p->n_kernels == 0 || p->n_kernels > KILN_GPU_MAX_KERNELS || p->n_steps == 0 ||
      p->n_steps > KILN_GPU_MAX_DISPATCHES)
    return CORRUPT("%u kernels, %u dispatches", p->n_kernels, p->n_steps);
  p->gpu_scratch_bytes = (uint64_t)hi << 32 | lo;
  for (uint32_t i = 0; i < p->n_kernels; ++i)
    KILN_RETURN_IF_ERROR(read_kernel(&r, &p->kernels[i], i, err));
  p->steps = (kiln_vk_step_t *)calloc(p->n_steps, sizeof *p->steps);
  if (!p->steps)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "gpu program: out of memory");
  for (uint32_t i = 0; i < p->n_steps; ++i) {
    kiln_status_t s = read_step(&r, p, &p->steps[i], i, err);
    if (s) {
      kiln_vk_program_free(p);
      return s;
    }
  }
  if (r.at != r.n) {
    kiln_vk_program_free(p);
    return CORRUPT("%llu words after the last dispatch", (unsigned long long)(r.n - r.at));
  }
  return KILN_STATUS_OK;
}

void kiln_vk_program_free(kiln_vk_program_t *p) {
  free(p->steps);
  p->steps = NULL;
}
