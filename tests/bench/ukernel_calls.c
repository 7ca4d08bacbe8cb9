/* Calls one linear micro-kernel CALLS times on a ROWS x IN matrix of random weights and N
 * tokens, so an emulator's executed-instruction count (qemu -singlestep -d nochain,exec)
 * gives the instructions of one call: (count(CALLS=3) - count(CALLS=1)) / 2, the setup
 * cancelling out (tests/bench/emu_counts.py). Deterministic: fixed seed, no threads.
 *
 *   ukernel-calls FORMAT ROWS IN [N] [CALLS]
 *     FORMAT: q8_0_r16 q4_0_r16 q4_1_r16 q4_K_r16 q5_K_r16 q6_K_r16 (kiln_uk_linear_packed),
 *     f16 q8_0 q4_0 q3_0 q4_K q5_K q6_K (kiln_uk_linear, rows of whole blocks; IN a
 *     multiple of 256 for the K-quants)
 *   ukernel-calls attention-KV HEAD_DIM CTX [N] [CALLS] [HEADS KV_HEADS]
 *     kiln_uk_attention, HEADS query heads (8) on KV_HEADS KV heads (4), KV cache f32, f16
 *     or i8f16 (K int8, V f16): the cache's first CTX - N positions filled with random
 *     elements (no kernel call: the count stays the calls'), then each call N tokens at
 *     positions CTX - N .. CTX - 1 (a decode step at context CTX when N is 1)
 * Built by the cross build against each kernel library (ukernel-calls-<isa>); it runs on
 * the host too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/quant.h"
#include "kiln/quant_packed.h"
#include "ukernel_abi.h"

static uint32_t g_seed = 12345u;
static uint32_t next(void) { return g_seed = g_seed * 1664525u + 1013904223u; }

static int parse_format(const char *s, uint32_t *f) {
  static const struct { const char *name; uint32_t id; } k[] = {
      {"q8_0_r16", KILN_TYPE_Q8_0_R16}, {"q4_0_r16", KILN_TYPE_Q4_0_R16},
      {"q4_1_r16", KILN_TYPE_Q4_1_R16}, {"q8_0_r32", KILN_TYPE_Q8_0_R32},
      {"q4_0_r32", KILN_TYPE_Q4_0_R32}, {"q4_K_r16", KILN_TYPE_Q4_K_R16},
      {"q5_K_r16", KILN_TYPE_Q5_K_R16}, {"q6_K_r16", KILN_TYPE_Q6_K_R16},
      {"f32", KILN_GGML_TYPE_F32},
      {"f16", KILN_GGML_TYPE_F16},      {"q8_0", KILN_GGML_TYPE_Q8_0},
      {"q4_0", KILN_GGML_TYPE_Q4_0},    {"q3_0", KILN_TYPE_Q3_0},
      {"q4_K", KILN_GGML_TYPE_Q4_K},    {"q5_K", KILN_GGML_TYPE_Q5_K},
      {"q6_K", KILN_GGML_TYPE_Q6_K}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i)
    if (!strcmp(s, k[i].name)) {
      *f = k[i].id;
      return 1;
    }
  return 0;
}

/* FNV-1a of the bits of v[0..n) and their sum: bit-exact means bit-exact. */
static void print_hash(const char *what, const float *v, long n) {
  double sum = 0;
  uint64_t hash = 14695981039346656037u;
  for (long i = 0; i < n; ++i) {
    sum += v[i];
    uint32_t bits;
    memcpy(&bits, &v[i], sizeof bits);
    for (int k = 0; k < 4; ++k)
      hash = (hash ^ ((bits >> (8 * k)) & 0xffu)) * 1099511628211u;
  }
  printf("%s bits %016llx checksum %.17g\n", what, (unsigned long long)hash, sum);
}

static float rnd1(void) { return (float)((int32_t)(next() >> 16) - 32768) / 32768.0f; }

static int attention_calls(int argc, char **argv) {
  const char *kv = argv[1] + strlen("attention-");
  uint32_t kf, vf;
  if (!strcmp(kv, "f32"))
    kf = vf = KILN_UK_KV_F32;
  else if (!strcmp(kv, "f16"))
    kf = vf = KILN_UK_KV_F16;
  else if (!strcmp(kv, "i8f16"))
    kf = KILN_UK_KV_I8, vf = KILN_UK_KV_F16;
  else {
    fprintf(stderr, "error: KV cache '%s' is not f32, f16 or i8f16\n", kv);
    return 2;
  }
  const long d = atol(argv[2]), ctx = atol(argv[3]);
  const long n = argc > 4 ? atol(argv[4]) : 1, calls = argc > 5 ? atol(argv[5]) : 1;
  const long heads = argc > 7 ? atol(argv[6]) : 8, kv_heads = argc > 7 ? atol(argv[7]) : 4;
  if (d < 1 || d > KILN_UK_ATTENTION_MAX_HEAD_DIM || ctx < 2 || ctx > 65536 || n < 1 ||
      n >= ctx || calls < 0 || calls > 1000 || kv_heads < 1 || heads < kv_heads ||
      heads > 256 || heads % kv_heads != 0 || argc == 7 || argc > 8) {
    fprintf(stderr, "error: need 1 <= HEAD_DIM <= %d, 2 <= CTX <= 65536, 1 <= N < CTX, "
                    "0 <= CALLS <= 1000, HEADS and KV_HEADS both or neither, HEADS a "
                    "multiple of KV_HEADS up to 256\n",
            KILN_UK_ATTENTION_MAX_HEAD_DIM);
    return 2;
  }
  float *q = malloc(sizeof(float) * (size_t)(n * heads * d));
  float *k = malloc(sizeof(float) * (size_t)(n * kv_heads * d));
  float *v = malloc(sizeof(float) * (size_t)(n * kv_heads * d));
  for (long i = 0; i < n * heads * d; ++i)
    q[i] = rnd1();
  for (long i = 0; i < n * kv_heads * d; ++i)
    k[i] = rnd1(), v[i] = rnd1();
  /* earlier positions: f32 in [-1, 1), f16 of magnitude 2^-6 .. 2^-5, int8 any, with
   * K scales of 1/127 */
  const long elems = ctx * kv_heads * d;
  float *k_scales = malloc(sizeof(float) * (size_t)(ctx * kv_heads));
  for (long i = 0; i < ctx * kv_heads; ++i)
    k_scales[i] = 1.0f / 127.0f;
  uint8_t *caches[2] = {malloc((size_t)elems * 4), malloc((size_t)elems * 4)};
  const uint32_t fmts[2] = {kf, vf};
  for (int c = 0; c < 2; ++c)
    for (long i = 0; i < elems; ++i) {
      if (fmts[c] == KILN_UK_KV_F32)
        ((float *)caches[c])[i] = rnd1();
      else if (fmts[c] == KILN_UK_KV_F16)
        ((uint16_t *)caches[c])[i] = (uint16_t)(0x2400 | (next() >> 22) | (next() >> 31 << 15));
      else
        caches[c][i] = (uint8_t)(next() >> 24);
    }
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)n);
  for (long t = 0; t < n; ++t)
    pos[t] = (int32_t)(ctx - n + t);
  float *scores = malloc(sizeof(float) * (size_t)(heads * ctx));
  float *out = calloc((size_t)(n * heads * d), sizeof(float));
  const float scale = 1.0f / sqrtf((float)d);
  for (long c = 0; c < calls; ++c)
    kiln_uk_attention(NULL, q, k, v, (int32_t)n, pos, (int32_t)heads, (int32_t)kv_heads,
                      (int32_t)d, scale, NULL, kf, vf, caches[0], k_scales, caches[1],
                      (int32_t)ctx, 0, 0, NULL, NULL, scores, out);
  char what[96];
  snprintf(what, sizeof what, "%s d=%ld ctx=%ld n=%ld calls=%ld", argv[1], d, ctx, n, calls);
  print_hash(what, out, n * heads * d);
  free(q), free(k), free(v), free(pos), free(caches[0]), free(caches[1]), free(k_scales);
  free(scores), free(out);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strncmp(argv[1], "attention-", strlen("attention-")))
    return attention_calls(argc, argv);
  uint32_t format;
  if (argc < 4 || !parse_format(argv[1], &format)) {
    fprintf(stderr, "usage: %s FORMAT ROWS IN [N] [CALLS]\n", argv[0]);
    return 2;
  }
  const long rows = atol(argv[2]), in = atol(argv[3]);
  const long n = argc > 4 ? atol(argv[4]) : 1, calls = argc > 5 ? atol(argv[5]) : 1;
  if (rows < 1 || rows > 65536 || in < 32 || in > 65536 || in % 32 || n < 1 || n > 512 ||
      calls < 0 || calls > 1000) {
    fprintf(stderr, "error: need 1 <= ROWS <= 65536, 32 <= IN <= 65536 (a multiple of 32), "
                    "1 <= N <= 512, 0 <= CALLS <= 1000\n");
    return 2;
  }
  const int packed = kiln_is_packed(format);
  const uint32_t base = packed ? kiln_packed_base_type(format) : format;
  /* Random codes with scales of 1/64 (fp16 0x2400) wherever a block format keeps one:
   * any bytes are valid codes, so no quantiser runs (it would dominate the count). */
  uint64_t row_bytes = 0;
  if (kiln_ggml_row_bytes(base, (uint64_t)in, &row_bytes) != KILN_STATUS_OK) {
    fprintf(stderr, "error: no row size for %s\n", argv[1]);
    return 1;
  }
  uint8_t *src = malloc(row_bytes * rows);
  for (uint64_t i = 0; i < row_bytes * rows; ++i)
    src[i] = (uint8_t)(next() >> 24);
  if (base == KILN_GGML_TYPE_F32)
    for (long i = 0; i < rows * in; ++i)
      ((float *)src)[i] = (float)((int32_t)(next() >> 16) - 32768) / 32768.0f;
  else if (base == KILN_GGML_TYPE_F16)
    for (long i = 0; i < rows * in; ++i)
      ((uint16_t *)src)[i] = (uint16_t)(0x2400 | (next() >> 22));
  else if (base == KILN_GGML_TYPE_Q4_K || base == KILN_GGML_TYPE_Q5_K ||
           base == KILN_GGML_TYPE_Q6_K)
    for (uint64_t r = 0; r < (uint64_t)rows; ++r)
      for (uint64_t b = 0; b < (uint64_t)in / 256; ++b) { /* d (and dmin) 1/64 */
        uint8_t *blk = src + r * row_bytes + b * (row_bytes / ((uint64_t)in / 256));
        uint8_t *d = blk + (base == KILN_GGML_TYPE_Q6_K ? 208 : 0);
        d[0] = 0x00, d[1] = 0x24;
        if (base != KILN_GGML_TYPE_Q6_K)
          d[2] = 0x00, d[3] = 0x24;
      }
  else
    for (uint64_t r = 0; r < (uint64_t)rows; ++r)
      for (uint64_t b = 0; b < (uint64_t)in / 32; ++b) {
        uint8_t *blk = src + r * row_bytes + b * (row_bytes / ((uint64_t)in / 32));
        blk[0] = 0x00, blk[1] = 0x24;
        if (base == KILN_GGML_TYPE_Q4_1)
          blk[2] = 0x00, blk[3] = 0xa4; /* min -1/64 */
      }
  const uint8_t *w = src;
  uint8_t *packed_w = NULL;
  const uint64_t group_bytes = packed ? kiln_packed_group_bytes(format, (uint64_t)in) : 0;
  if (packed) {
    const long group_rows = (long)kiln_packed_rows(format);
    /* 128-byte aligned as the artifact places r32 matrices (HVX loads whole vectors) */
    packed_w = aligned_alloc(128, (group_bytes * (uint64_t)((rows + group_rows - 1) / group_rows) + 127) / 128 * 128);
    if (kiln_repack_packed(format, src, row_bytes, (uint64_t)rows, (uint64_t)in, packed_w) !=
        KILN_STATUS_OK) {
      fprintf(stderr, "error: repacking failed\n");
      return 1;
    }
    w = packed_w;
  }
  float *x = malloc(sizeof(float) * (size_t)(n * in));
  for (long i = 0; i < n * in; ++i)
    x[i] = (float)((int32_t)(next() >> 16) - 32768) / 32768.0f;
  float *y = calloc((size_t)(n * rows), sizeof(float));
  uint8_t *qx = malloc((size_t)(kiln_packed_act_stride((uint64_t)in) * (uint64_t)n));
  for (long c = 0; c < calls; ++c) {
    if (packed)
      kiln_uk_linear_packed(NULL, format, x, (int32_t)n, (int32_t)in, w, (int64_t)group_bytes,
                            (int32_t)rows, y, qx, 0);
    else
      kiln_uk_linear(NULL, format, x, (int32_t)n, (int32_t)in, w, (int64_t)row_bytes,
                     (int32_t)rows, y);
  }
  char what[96];
  snprintf(what, sizeof what, "%s %ldx%ld n=%ld calls=%ld", argv[1], rows, in, n, calls);
  print_hash(what, y, n * rows);
  free(src), free(packed_w), free(x), free(y), free(qx);
  return 0;
}
