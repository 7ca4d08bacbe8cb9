/* kiln-run bench: prefill speed for a P-token prompt, decode speed over N greedy tokens,
 * time to first token, and the effective weight bandwidth of decode (weight bytes read per
 * token x tokens/s), over R repetitions on a fresh cache each: median, min and max. After
 * each repetition the streaming-read probe runs with the same threads for as long as that
 * repetition's decode did, and decode is judged by its share of that read: on a shared
 * machine the bandwidth moves by half within minutes, so a read taken once for all
 * repetitions compared decode with another moment, and within seconds, so a read shorter
 * than the decode compared a second's average with the best of a few moments (the share
 * of that best pass, the peak, is printed too). The compute probe runs next to it, so a
 * run also says when the cores were slower. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln-run.h"

typedef struct series_s {
  double *v;
  uint32_t n;
} series_t;

#define KSERIES 9 /* the measured series; see run_bench */

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts the series and returns its median. */
static double median(series_t *s) {
  qsort(s->v, s->n, sizeof *s->v, cmp_double);
  return s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
}

static void report(const char *name, const char *unit, series_t *s) {
  const double med = median(s);
  printf("%-18s %12.2f %-6s (min %.2f, max %.2f)\n", name, med, unit, s->v[0], s->v[s->n - 1]);
}

/* --kv spelling of the artifact's KV cache element types (ggml ids 0 f32, 1 f16, 24 int8). */
static const char *kv_elem(uint32_t f) { return f == 0 ? "f32" : f == 1 ? "f16" : f == 24 ? "int8" : "?"; }

static const char *kv_format_name(uint32_t k, uint32_t v) {
  static char buf[32];
  if (k == v)
    return kv_elem(k);
  snprintf(buf, sizeof buf, "k=%s,v=%s", kv_elem(k), kv_elem(v));
  return buf;
}

/* One repetition: fills prefill tok/s, decode tok/s, TTFT (ms) and GB/s at index r. */
static int one_rep(kiln_session_t *s, const int32_t *prompt, uint32_t p, uint32_t n,
                   series_t out[4], uint32_t r) {
  kiln_error_t err;
  kiln_session_reset(s);
  if (kiln_session_prefill(s, prompt, p, &err) != KILN_STATUS_OK)
    return run_fail("%s", err.message);
  for (uint32_t i = 0; i < n; ++i) {
    int32_t next;
    if (kiln_session_sample(s, &next, &err) != KILN_STATUS_OK ||
        kiln_session_decode(s, next, &err) != KILN_STATUS_OK)
      return run_fail("%s", err.message);
  }
  kiln_session_stats_t st;
  kiln_session_stats(s, &st);
  out[0].v[r] = st.prefill_tok_s;
  out[1].v[r] = st.decode_tok_s;
  out[2].v[r] = st.ttft_s * 1e3;
  out[3].v[r] = (double)st.weight_bytes_per_token * st.decode_tok_s / 1e9;
  return 0;
}

int run_bench(const run_options_t *o) {
  kiln_artifact_t *a;
  kiln_session_t *s;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (run_open(o, &a, &s))
    return 1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  kiln_artifact_info_t info;
  kiln_artifact_info(a, &info);
  static const char *const kSignature[] = {"not signed", "signed, not checked",
                                           "signature verified"};
  printf("open: %.1f ms (artifact and session; %s)\n",
         (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
         kSignature[info.signature <= 2 ? info.signature : 0]);
  const uint32_t p = o->prompt_tokens, n = o->n_predict;
  int rc = 0;
  if ((uint64_t)p + n > info.max_ctx)
    rc = run_fail("-p %u + -n %u exceed the artifact's context of %u", p, n, info.max_ctx);
  int32_t *prompt = malloc((size_t)p * sizeof *prompt);
  double *vals = malloc(KSERIES * (size_t)o->reps * sizeof *vals);
  if (!rc && (!prompt || !vals))
    rc = run_fail("out of memory");
  /* prefill, decode, TTFT, effective GB/s (one_rep); read GB/s, effective / read;
   * compute GFLOP/s; peak read GB/s, effective / peak */
  series_t ser[KSERIES];
  for (int k = 0; !rc && k < KSERIES; ++k) {
    ser[k].v = vals + (size_t)k * o->reps;
    ser[k].n = o->reps;
  }
  /* A fixed pseudo-text: BOS (when the model has one), then ids spread over the vocab. */
  for (uint32_t i = 0; !rc && i < p; ++i)
    prompt[i] = (int32_t)((3 + (uint64_t)i * 7919u) % info.vocab_size);
  if (!rc && info.bos_id >= 0)
    prompt[0] = info.bos_id;
  kiln_session_stats_t st;
  kiln_session_stats(s, &st);
  run_probe_t *probe = NULL;
  if (!rc && n && !(probe = run_probe_open(RUN_PROBE_BYTES)))
    rc = run_fail("out of memory for the 512 MiB read-bandwidth probe");
  run_cpu_sample_t cpu0, cpu1;
  run_cpu_sample(&cpu0);
  for (uint32_t r = 0; !rc && r < o->reps; ++r) {
    rc = one_rep(s, prompt, p, n, ser, r);
    if (!rc)
      ser[6].v[r] = run_compute_gflops(st.n_threads);
    if (!rc && probe) {
      const double decode_s = ser[1].v[r] > 0 ? n / ser[1].v[r] : 0.0;
      const run_probe_read_t read = run_probe_read(probe, st.n_threads, decode_s);
      ser[4].v[r] = read.sustained_gbs;
      ser[5].v[r] = read.sustained_gbs > 0 ? 100.0 * ser[3].v[r] / read.sustained_gbs : 0.0;
      ser[7].v[r] = read.peak_gbs;
      ser[8].v[r] = read.peak_gbs > 0 ? 100.0 * ser[3].v[r] / read.peak_gbs : 0.0;
    }
  }
  run_probe_close(probe);
  run_cpu_sample(&cpu1);
  if (!rc) {
    kiln_session_stats(s, &st);
    const char *threads = st.n_threads == 1 ? "thread" : "threads";
    printf("kiln-run bench: %s (%s), prompt %u (%s), generate %u, %u repetitions, %u %s%s\n",
           o->artifact, info.target_name, p,
           o->all_logits ? "every position's logits" : "last position's logits", n, o->reps,
           st.n_threads, threads, st.pinned_threads ? " (pinned)" : "");
    report("prefill", "tok/s", &ser[0]);
    if (n)
      report("decode", "tok/s", &ser[1]);
    report("TTFT", "ms", &ser[2]);
    if (n) {
      report("effective", "GB/s", &ser[3]);
      /* The roofline, measured with the same threads after each repetition: decode is
       * judged by the share of it that its weight reads reach. */
      const double bw = median(&ser[4]);
      printf("%-18s %12.2f GB/s   (min %.2f, max %.2f; streaming read, %u %s, after each "
             "repetition for as long as its decode)\n", "read bandwidth", bw, ser[4].v[0],
             ser[4].v[ser[4].n - 1], st.n_threads, threads);
      const double pct = median(&ser[5]);
      printf("%-18s %12.1f %%      (min %.1f, max %.1f; effective / the read after it, "
             "median)\n", "of bandwidth", pct, ser[5].v[0], ser[5].v[ser[5].n - 1]);
      const double peak = median(&ser[7]);
      printf("%-18s %12.2f GB/s   (min %.2f, max %.2f; the best single pass of that read)\n",
             "peak read", peak, ser[7].v[0], ser[7].v[ser[7].n - 1]);
      const double peak_pct = median(&ser[8]);
      printf("%-18s %12.1f %%      (min %.1f, max %.1f; effective / that peak, median)\n",
             "of peak read", peak_pct, ser[8].v[0], ser[8].v[ser[8].n - 1]);
    }
    const double gflops = median(&ser[6]); /* sorts: before reading min and max */
    printf("%-18s %12.2f GFLOP/s (min %.2f, max %.2f; multiply-adds in registers, %u %s, "
           "after each repetition)\n", "compute probe", gflops, ser[6].v[0],
           ser[6].v[ser[6].n - 1], st.n_threads, threads);
    printf("%-18s %12llu bytes\n", "weights/token", (unsigned long long)st.weight_bytes_per_token);
    printf("%-18s %12llu bytes   (%s)\n", "KV/token", (unsigned long long)info.kv_bytes_per_token,
           kv_format_name(info.kv_k_format, info.kv_v_format));
    printf("%-18s %12.2f MiB\n", "peak memory", (double)st.peak_memory_bytes / (1 << 20));
    uint64_t huge_kib, size_kib;
    if (run_huge_pages(info.weights_data, &huge_kib, &size_kib))
      printf("%-18s %12.2f MiB    (of the %.2f MiB %s that holds the weights)\n",
             "in 2 MiB pages", huge_kib / 1024.0, size_kib / 1024.0,
             info.weights_memory == KILN_WEIGHTS_HUGE_PAGES ? "copy" : "file mapping");
    double steal, others;
    if (run_cpu_share(&cpu0, &cpu1, &steal, &others)) {
      /* the cores the run did not have: a low "of bandwidth" with a high share here was
       * the machine, not the code */
      printf("%-18s %12.1f %%      (of all CPUs' time during the repetitions: taken by the "
             "hypervisor)\n", "cpu stolen", steal);
      printf("%-18s %12.1f %%      (used by other processes)\n", "cpu others", others);
    }
  }
  free(prompt);
  free(vals);
  run_close(a, s);
  return rc;
}
