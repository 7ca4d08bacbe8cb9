/* kiln_vulkan_backend(): runs an artifact's GPU program (kiln/gpu_program.h) on a Vulkan
 * device. At open: the device, where each op runs (vk_placement.h), the weights uploaded
 * once, the session's buffers (scratch, KV cache, tokens, positions, logits, the program's
 * own scratch, all host-visible) and one pipeline per kernel and constants. A forward pass
 * writes tokens and positions into their mapped buffers. When every op of its batch kind is
 * on the device it submits the recording for its batch size, recorded once and re-submitted
 * while the size stays the same (decode); otherwise it runs the GPU ops between two CPU ops
 * as one submission and each CPU op through the artifact's per-op entry, on the same
 * mapped buffers (the CPU code's memory plan is the GPU's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/abi.h"
#include "kiln/vulkan.h"

#include "../../src/loader/artifact_internal.h"
#include "../../src/platform/error.h"
#include "../../src/platform/platform.h"
#include "vk_device.h"
#include "vk_placement.h"
#include "vk_program.h"

typedef struct {
  kiln_vk_device_t *dev;
  kiln_vk_program_t program;
  kiln_vk_placement_t placement;
  kiln_vk_buffer_t *buffers[KILN_GPU_BUF_COUNT];
  kiln_vk_pipeline_t **pipelines; /* per step; shared ones appear once in owned */
  kiln_vk_pipeline_t **owned;
  uint32_t n_owned;
  kiln_model_forward_fn_t *op_entry; /* per op, for the ops placed on the CPU */
  kiln_exec_ctx_t cpu;               /* their context: the mapped GPU buffers, and */
  const kiln_exec_ctx_t *host;       /* the session's pool */
  uint32_t vocab, max_batch;
  int32_t recorded_n; /* batch size of the cached recording, 0: none */
  uint32_t *recorded; /* the steps of the last submission, in order */
  uint32_t n_recorded;
  int validation;
  int profile;        /* KILN_VULKAN_PROFILE=1: GPU time per kernel, printed at close */
  double kernel_ns[KILN_GPU_MAX_KERNELS];
  uint64_t kernel_runs[KILN_GPU_MAX_KERNELS];
  double *times;      /* per dispatch, when profiling */
  uint64_t decode_steps, prefill_batches, decode_dispatches, weight_bytes_per_token;
  uint64_t kv_bytes_per_position;
  uint64_t submitted; /* dispatches submitted over the session */
} vk_state_t;

/* KILN_VULKAN_PROFILE=1: what the GPU did over the session, at its end. Each dispatch is
 * followed by one barrier (kiln_vk_dispatch). */
static void print_profile(const vk_state_t *s) {
  double total = 0;
  for (uint32_t k = 0; k < s->program.n_kernels; ++k)
    total += s->kernel_ns[k];
  fprintf(stderr, "vulkan profile: %llu decode steps, %llu prefill batches\n",
          (unsigned long long)s->decode_steps, (unsigned long long)s->prefill_batches);
  if (s->decode_steps)
    fprintf(stderr,
            "vulkan profile: per decoded token %.1f dispatches, %.1f barriers, %llu weight "
            "bytes read + %llu KV bytes per position attended\n",
            (double)s->decode_dispatches / (double)s->decode_steps,
            (double)s->decode_dispatches / (double)s->decode_steps,
            (unsigned long long)s->weight_bytes_per_token,
            (unsigned long long)s->kv_bytes_per_position);
  for (uint32_t k = 0; k < s->program.n_kernels; ++k)
    if (s->kernel_runs[k] || s->program.kernels[k].replaces == KILN_GPU_NO_KERNEL)
      fprintf(stderr, "vulkan profile: %-10s %8llu dispatches %10.3f ms GPU %5.1f%%\n",
              s->program.kernels[k].name, (unsigned long long)s->kernel_runs[k],
              s->kernel_ns[k] / 1e6, total > 0 ? 100.0 * s->kernel_ns[k] / total : 0.0);
}

static void close_state(void *state) {
  vk_state_t *s = (vk_state_t *)state;
  if (!s)
    return;
  if (s->dev && s->validation)
    fprintf(stderr, "vulkan: validation layer: %llu messages%s%s\n",
            (unsigned long long)kiln_vk_validation_messages(s->dev),
            kiln_vk_validation_messages(s->dev) ? "; first: " : "",
            kiln_vk_first_validation_message(s->dev));
  if (s->profile)
    print_profile(s);
  free(s->times);
  free(s->recorded);
  free(s->op_entry);
  for (uint32_t i = 0; i < s->n_owned; ++i)
    kiln_vk_pipeline_destroy(s->owned[i]);
  for (uint32_t i = 0; i < KILN_GPU_BUF_COUNT; ++i)
    kiln_vk_buffer_destroy(s->buffers[i]);
  kiln_vk_device_close(s->dev);
  kiln_vk_placement_free(&s->placement);
  kiln_vk_program_free(&s->program);
  free(s->pipelines);
  free(s->owned);
  free(s);
}

static kiln_status_t make_buffer(vk_state_t *s, uint32_t id, uint64_t bytes, kiln_error_t *err) {
  bytes = bytes < 4 ? 4 : (bytes + 3) & ~(uint64_t)3;
  return kiln_vk_buffer_create(s->dev, bytes, &s->buffers[id], err);
}

/* Every buffer but the weights (bound in windows, vk_placement.h) is bound whole: one
 * larger than a binding may span is an error naming it. */
static kiln_status_t check_ranges(vk_state_t *s, kiln_error_t *err) {
  static const char *what[KILN_GPU_BUF_COUNT] = {
      "the weights", "the scratch", "the KV cache (compile with a smaller --ctx)",
      "the tokens", "the positions", "the logits", "the GPU scratch (a smaller --ctx)"};
  for (uint32_t i = 0; i < s->program.n_steps; ++i)
    if (s->program.steps[i].weights_hi > kiln_vk_buffer_size(s->buffers[KILN_GPU_BUF_WEIGHTS]))
      return kiln_error_set(err, KILN_STATUS_CORRUPT,
                            "vulkan: dispatch %u reads past the weights section", i);
  const uint64_t max = s->placement.max_range;
  for (uint32_t b = KILN_GPU_BUF_SCRATCH; b < KILN_GPU_BUF_COUNT && max; ++b) {
    const uint64_t size = kiln_vk_buffer_size(s->buffers[b]);
    if (size > max)
      return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                            "vulkan: %s is %llu bytes, more than the %llu one binding may span "
                            "on this device (maxStorageBufferRange)",
                            what[b], (unsigned long long)size, (unsigned long long)max);
  }
  return KILN_STATUS_OK;
}

/* One pipeline per step the device runs, shared by steps with the same kernel, constants
 * and interface. */
static kiln_status_t make_pipelines(vk_state_t *s, kiln_error_t *err) {
  const kiln_vk_program_t *p = &s->program;
  s->pipelines = (kiln_vk_pipeline_t **)calloc(p->n_steps, sizeof *s->pipelines);
  s->owned = (kiln_vk_pipeline_t **)calloc(p->n_steps, sizeof *s->owned);
  if (!s->pipelines || !s->owned)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  for (uint32_t i = 0; i < p->n_steps; ++i) {
    const kiln_vk_step_t *st = &p->steps[i];
    if (!kiln_vk_step_runs(&s->placement, p, i))
      continue;
    for (uint32_t j = 0; j < i && !s->pipelines[i]; ++j) {
      const kiln_vk_step_t *o = &p->steps[j];
      if (o->kernel == st->kernel && o->n_spec == st->n_spec && o->n_bind == st->n_bind &&
          o->n_push == st->n_push && !memcmp(o->spec, st->spec, st->n_spec * 4))
        s->pipelines[i] = s->pipelines[j];
    }
    if (s->pipelines[i])
      continue;
    const kiln_vk_program_kernel_t *k = &p->kernels[s->placement.use[st->kernel]];
    kiln_vk_pipeline_desc_t d = {k->name, k->words, k->n_words, st->n_bind, st->n_push * 4,
                                 st->spec, st->n_spec};
    KILN_RETURN_IF_ERROR(kiln_vk_pipeline_create(s->dev, &d, &s->pipelines[i], err));
    s->owned[s->n_owned++] = s->pipelines[i];
  }
  return KILN_STATUS_OK;
}

/* The CPU entries of the ops placed on the CPU for either batch kind. */
static kiln_status_t bind_cpu_ops(vk_state_t *s, const kiln_artifact_t *a, kiln_error_t *err) {
  const kiln_vk_placement_t *pl = &s->placement;
  if (pl->all_gpu[KILN_VK_DECODE] && pl->all_gpu[KILN_VK_PREFILL])
    return KILN_STATUS_OK;
  s->op_entry = (kiln_model_forward_fn_t *)calloc(pl->n_ops, sizeof *s->op_entry);
  if (!s->op_entry)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  for (uint32_t op = 0; op < pl->n_ops; ++op) {
    if (pl->on_gpu[KILN_VK_DECODE][op] && pl->on_gpu[KILN_VK_PREFILL][op])
      continue;
    char name[64];
    snprintf(name, sizeof name, "%s%u", KILN_OP_ENTRY_PREFIX, op);
    void *fn = a->code_handle ? kiln_platform_code_symbol(a->code_handle, name) : NULL;
    if (!fn)
      return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                            "vulkan: op %u must run on the CPU, and the artifact's code has no "
                            "'%s'", op, name);
    memcpy(&s->op_entry[op], &fn, sizeof fn);
  }
  s->cpu.abi_version = KILN_ABI_VERSION;
  s->cpu.weights = a->weights;
  s->cpu.scratch = (uint8_t *)kiln_vk_buffer_data(s->buffers[KILN_GPU_BUF_SCRATCH]);
  s->cpu.kv = (uint8_t *)kiln_vk_buffer_data(s->buffers[KILN_GPU_BUF_KV]);
  return KILN_STATUS_OK;
}

static kiln_status_t open_state(const kiln_backend_host_t *host, void **out,
                                kiln_error_t *err) {
  const kiln_artifact_t *a = host->artifact;
  *out = NULL;
  if (!a->gpu)
    return kiln_error_set(err, KILN_STATUS_UNSUPPORTED,
                          "vulkan: the artifact has no GPU program (compile it with "
                          "--target <cpu target>+vulkan)");
  vk_state_t *s = (vk_state_t *)calloc(1, sizeof *s);
  if (!s)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  s->host = host->ctx;
  s->vocab = a->info.vocab_size;
  s->max_batch = a->info.max_batch;
  s->weight_bytes_per_token = a->info.weight_bytes_per_token;
  s->kv_bytes_per_position = a->info.kv_bytes_per_token;
  const char *device = getenv("KILN_VULKAN_DEVICE");
  const char *validation = getenv("KILN_VULKAN_VALIDATION");
  const char *profile = getenv("KILN_VULKAN_PROFILE");
  const char *mask = getenv("KILN_VULKAN_MASK");
  const char *fault = getenv("KILN_VULKAN_FAULT");
  kiln_vk_options_t o = {validation && *validation == '1', device ? atoi(device) : -1, NULL, 0};
  if (fault && strncmp(fault, "device-lost:", 12) == 0)
    o.lose_device_at_submit = (uint32_t)strtoul(fault + 12, NULL, 10);
  s->validation = o.validation;
  s->profile = profile && *profile == '1';
  kiln_status_t st = kiln_vk_program_read(a->gpu, a->gpu_size, &s->program, err);
  if (!st && s->program.n_steps > 1024)
    o.max_dispatches = s->program.n_steps;
  if (!st)
    st = kiln_vk_device_open(&o, &s->dev, err);
  if (!st) {
    const char *prefer = getenv("KILN_VULKAN_PREFER");
    const char *max_range = getenv("KILN_VULKAN_MAX_RANGE");
    const kiln_vk_place_options_t po = {mask && strstr(mask, "subgroup-arithmetic") != NULL,
                                        mask && strstr(mask, "variants") != NULL,
                                        prefer && strstr(prefer, "variants") != NULL,
                                        a->weights_size,
                                        max_range ? strtoull(max_range, NULL, 10) : 0};
    st = kiln_vk_place(&s->program, kiln_vk_device_info(s->dev), &po, &s->placement, err);
  }
  const uint64_t max_batch = s->max_batch;
  if (!st)
    st = make_buffer(s, KILN_GPU_BUF_WEIGHTS, a->weights_size, err);
  if (!st) {
    memcpy(kiln_vk_buffer_data(s->buffers[KILN_GPU_BUF_WEIGHTS]), a->weights, a->weights_size);
    st = make_buffer(s, KILN_GPU_BUF_SCRATCH, a->info.scratch_bytes, err);
  }
  if (!st)
    st = make_buffer(s, KILN_GPU_BUF_KV, a->info.kv_bytes, err);
  if (!st)
    st = make_buffer(s, KILN_GPU_BUF_TOKENS, max_batch * 4, err);
  if (!st)
    st = make_buffer(s, KILN_GPU_BUF_POSITIONS, max_batch * 4, err);
  if (!st)
    st = make_buffer(s, KILN_GPU_BUF_LOGITS, max_batch * s->vocab * 4, err);
  if (!st)
    st = make_buffer(s, KILN_GPU_BUF_GPU_SCRATCH, s->program.gpu_scratch_bytes, err);
  if (!st)
    st = check_ranges(s, err);
  if (!st)
    st = make_pipelines(s, err);
  if (!st)
    st = bind_cpu_ops(s, a, err);
  if (!st && !(s->recorded = (uint32_t *)calloc(s->program.n_steps, sizeof(uint32_t))))
    st = kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  if (!st && s->profile && !(s->times = (double *)calloc(s->program.n_steps, sizeof(double))))
    st = kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY, "vulkan: out of memory");
  if (st) {
    close_state(s);
    return st;
  }
  *out = s;
  return KILN_STATUS_OK;
}

static kiln_status_t dispatch_step(vk_state_t *s, uint32_t i, int32_t n, kiln_error_t *err) {
  const kiln_vk_step_t *st = &s->program.steps[i];
  uint32_t push[KILN_GPU_MAX_PUSH_WORDS];
  kiln_vk_buffer_t *bufs[KILN_GPU_MAX_BINDINGS];
  uint64_t offsets[KILN_GPU_MAX_BINDINGS] = {0}, ranges[KILN_GPU_MAX_BINDINGS] = {0};
  for (uint32_t k = 0; k < st->n_push; ++k)
    push[k] = kiln_vk_value_at(st->push[k], (uint32_t)n);
  for (uint32_t k = 0; k < st->n_bind; ++k) {
    bufs[k] = s->buffers[st->bind[k]];
    if (st->bind[k] == KILN_GPU_BUF_WEIGHTS && s->placement.windowed) {
      /* the window this step reads; its offsets become relative to the window's base */
      kiln_vk_window(&s->placement, st, &offsets[k], &ranges[k]);
      if (offsets[k] + ranges[k] > kiln_vk_buffer_size(bufs[k]))
        ranges[k] = kiln_vk_buffer_size(bufs[k]) - offsets[k];
      for (uint32_t j = 0; j < st->n_offsets; ++j)
        push[st->offset_word[j]] -= (uint32_t)(offsets[k] / st->offset_divisor[j]);
    }
  }
  kiln_status_t r = kiln_vk_dispatch_ranges(s->dev, s->pipelines[i], bufs, offsets, ranges, push,
                                            kiln_vk_groups_at(st->groups[0], (uint32_t)n),
                                            kiln_vk_groups_at(st->groups[1], (uint32_t)n),
                                            kiln_vk_groups_at(st->groups[2], (uint32_t)n), err);
  if (r) {
    kiln_error_t ignored;
    kiln_vk_end(s->dev, &ignored);
    return r; /* "vulkan: ..." from the device layer */
  }
  s->recorded[s->n_recorded++] = i;
  return KILN_STATUS_OK;
}

/* Submits what is recorded and waits; the GPU times go to the profile. */
static kiln_status_t submit(vk_state_t *s, kiln_error_t *err) {
  KILN_RETURN_IF_ERROR(kiln_vk_submit_wait(s->dev, 0, err));
  s->submitted += s->n_recorded;
  if (s->profile) {
    const uint32_t got = kiln_vk_dispatch_times(s->dev, s->times, s->n_recorded);
    for (uint32_t i = 0; i < got; ++i) {
      const uint32_t k = s->placement.use[s->program.steps[s->recorded[i]].kernel];
      s->kernel_ns[k] += s->times[i];
      s->kernel_runs[k]++;
    }
  }
  return KILN_STATUS_OK;
}

/* Every op on the device: one recording per batch size, re-submitted. */
static kiln_status_t run_all_gpu(vk_state_t *s, int32_t n, kiln_error_t *err) {
  if (s->recorded_n != n) {
    s->recorded_n = 0;
    s->n_recorded = 0;
    KILN_RETURN_IF_ERROR(kiln_vk_begin(s->dev, err));
    for (uint32_t i = 0; i < s->program.n_steps; ++i)
      if (kiln_vk_step_applies(&s->program.steps[i], (uint32_t)n))
        KILN_RETURN_IF_ERROR(dispatch_step(s, i, n, err));
    KILN_RETURN_IF_ERROR(kiln_vk_end(s->dev, err));
    s->recorded_n = n;
  }
  return submit(s, err);
}

/* Some ops on the CPU: the GPU ops between two of them as one submission. */
static kiln_status_t run_mixed(vk_state_t *s, const int32_t *tokens, const int32_t *positions,
                               int32_t n, kiln_error_t *err) {
  const uint8_t *on_gpu = s->placement.on_gpu[n == 1 ? KILN_VK_DECODE : KILN_VK_PREFILL];
  float *logits = (float *)kiln_vk_buffer_data(s->buffers[KILN_GPU_BUF_LOGITS]);
  int open = 0;
  s->recorded_n = 0; /* the cached recording is gone */
  for (uint32_t i = 0; i < s->program.n_steps;) {
    const uint32_t op = s->program.steps[i].op;
    uint32_t end = i;
    while (end < s->program.n_steps && s->program.steps[end].op == op)
      ++end;
    if (on_gpu[op]) {
      for (; i < end; ++i) {
        if (!kiln_vk_step_applies(&s->program.steps[i], (uint32_t)n))
          continue;
        if (!open) {
          s->n_recorded = 0;
          KILN_RETURN_IF_ERROR(kiln_vk_begin(s->dev, err));
          open = 1;
        }
        KILN_RETURN_IF_ERROR(dispatch_step(s, i, n, err));
      }
      continue;
    }
    if (open) {
      KILN_RETURN_IF_ERROR(kiln_vk_end(s->dev, err));
      KILN_RETURN_IF_ERROR(submit(s, err));
      open = 0;
    }
    /* on the session's threads, as the governor last set them */
    s->cpu.n_threads = s->host->n_threads;
    s->cpu.parallel_for = s->host->parallel_for;
    s->cpu.pool = s->host->pool;
    s->cpu.last_logits_only = s->host->last_logits_only;
    if (s->op_entry[op](&s->cpu, tokens, positions, n, logits) != 0)
      return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE, "vulkan: the CPU code of op %u "
                            "refused a batch of %d tokens", op, n);
    i = end;
  }
  if (open) {
    KILN_RETURN_IF_ERROR(kiln_vk_end(s->dev, err));
    KILN_RETURN_IF_ERROR(submit(s, err));
  }
  return KILN_STATUS_OK;
}

static kiln_status_t forward(void *state, const int32_t *tokens, const int32_t *positions,
                             int32_t n, float *logits, int last_only, kiln_error_t *err) {
  vk_state_t *s = (vk_state_t *)state;
  if (n < 1 || (uint32_t)n > s->max_batch)
    return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE, "vulkan: a batch of %d tokens (1..%u)",
                          n, s->max_batch);
  memcpy(kiln_vk_buffer_data(s->buffers[KILN_GPU_BUF_TOKENS]), tokens, (size_t)n * 4);
  memcpy(kiln_vk_buffer_data(s->buffers[KILN_GPU_BUF_POSITIONS]), positions, (size_t)n * 4);
  const int kind = n == 1 ? KILN_VK_DECODE : KILN_VK_PREFILL;
  const uint64_t before = s->submitted;
  KILN_RETURN_IF_ERROR(s->placement.all_gpu[kind] ? run_all_gpu(s, n, err)
                                                  : run_mixed(s, tokens, positions, n, err));
  if (n == 1) {
    s->decode_steps++;
    s->decode_dispatches += s->submitted - before;
  } else {
    s->prefill_batches++;
  }
  const float *out = (const float *)kiln_vk_buffer_data(s->buffers[KILN_GPU_BUF_LOGITS]);
  const size_t first = last_only ? (size_t)(n - 1) : 0;
  memcpy(logits + first * s->vocab, out + first * s->vocab,
         ((size_t)n - first) * s->vocab * sizeof(float));
  return KILN_STATUS_OK;
}

static const char *device_name(void *state) {
  return kiln_vk_device_info(((vk_state_t *)state)->dev)->name;
}

static uint32_t dispatch_times(void *state, double *ns, uint32_t cap) {
  return kiln_vk_dispatch_times(((vk_state_t *)state)->dev, ns, cap);
}

static size_t placement(void *state, char *buf, size_t size) {
  vk_state_t *s = (vk_state_t *)state;
  return kiln_vk_placement_text(&s->placement, &s->program, buf, size);
}

const kiln_backend_t *kiln_vulkan_backend(void) {
  static const kiln_backend_t backend = {"vulkan",    0,              open_state,
                                         forward,     device_name,    dispatch_times,
                                         placement,   close_state};
  return &backend;
}
