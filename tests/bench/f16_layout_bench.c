/* Decode matrix-vector over f16 weights in six memory orders, against the read bandwidth
 * measured in the same run: how much of f16 decode's gap to the read is the order the
 * weights are read in (f16 is stored as plain rows; the block formats have kiln's
 * single-stream r16 layout).
 *   rows8   plain rows, 8-row tiles walking the rows together 32 elements at a time: the
 *           order of x86/linear.c's 8-row decode tile (8 row streams per thread), which
 *           every f16 row takes with AVX2 and rows over 2048 elements with AVX-512
 *   rowseq  plain rows one after the other, one chain per row (one stream): the kernel's
 *           order for f16 rows up to 2048 elements with AVX-512 (F16_ROW_BY_ROW_MAX_IN)
 *   chunk16 16-row groups stored as 16-element chunks of the 16 rows (512 bytes a chunk,
 *           one stream), the rows8 arithmetic per row
 *   chunk8  the same with 8-row groups (256 bytes a chunk)
 *   rows2 / rows4  plain rows in 2- or 4-row tiles (fewer streams than rows8, more chains
 *           than rowseq)
 * Each variant gives every row the same chain of fused multiply-adds, so the results are
 * the same bits in every order (checked). Weights fill ~1 GiB (MiB env: other sizes), in
 * 2 MiB pages where the kernel has them; T threads (env, 2) each take a contiguous share
 * of every matrix and meet at a barrier after it, as the runtime's pool does. Median of
 * ROUNDS tokens per variant, the variants interleaved round by round. AVX-512 (F + F16C):
 * one 16-lane chain per row; AVX2 (+ FMA, F16C): one 8-lane chain per row, two FMAs per
 * 16 elements, as x86/linear.c's AVX2 tile.
 *
 *   gcc -O2 -march=native tests/bench/f16_layout_bench.c -lpthread -o /tmp/f16lb
 *   /tmp/f16lb ROWS IN [ROUNDS]        # e.g. 5632 2048 (TinyLlama's ffn_up) or 2048 5632
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { PROBE, ROWS8, ROWSEQ, CHUNK16, CHUNK8, ROWS2, ROWS4, N_VARIANTS };
static const char *kNames[N_VARIANTS] = {"read probe", "rows8 (the kernel's order)", "rowseq",
                                         "chunk16", "chunk8", "rows2", "rows4"};

static int g_rows, g_in, g_mats, g_threads = 2, g_what;
static size_t g_mat_bytes;
static uint16_t *g_plain, *g_chunk16, *g_chunk8; /* the same weights in each layout */
static float *g_x, *g_y[N_VARIANTS];
static atomic_int g_arrived, g_gen, g_go, g_done;
static volatile float g_sink;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#if defined(__AVX512F__)
typedef __m512 acc_t;
#define ACC_ZERO() _mm512_setzero_ps()
/* acc + w[0..16) * x[0..16): one 16-lane FMA */
static inline acc_t fma16(const uint16_t *w, const float *x, acc_t acc) {
  return _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w)),
                         _mm512_loadu_ps(x), acc);
}
static inline float reduce(acc_t v) { return _mm512_reduce_add_ps(v); }
#else /* AVX2: two 8-lane FMAs into the one chain, as x86/linear.c's AVX2 tile */
typedef __m256 acc_t;
#define ACC_ZERO() _mm256_setzero_ps()
static inline acc_t fma16(const uint16_t *w, const float *x, acc_t acc) {
  acc = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w)),
                        _mm256_loadu_ps(x), acc);
  return _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 8))),
                         _mm256_loadu_ps(x + 8), acc);
}
static inline float reduce(acc_t v) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#endif

/* R-row tiles of plain rows (R <= 8), R streams per thread. */
static void rowsR(int R, const uint16_t *w, int r0, int r1, float *y) {
  for (int r = r0; r < r1; r += R) {
    acc_t acc[8];
    for (int i = 0; i < R; ++i)
      acc[i] = ACC_ZERO();
    for (int c = 0; c < g_in; c += 16) {
      for (int i = 0; i < R; ++i)
        acc[i] = fma16(w + (size_t)(r + i) * g_in + c, g_x + c, acc[i]);
    }
    for (int i = 0; i < R; ++i)
      y[r + i] = reduce(acc[i]);
  }
}

static void rowseq(const uint16_t *w, int r0, int r1, float *y) {
  for (int r = r0; r < r1; ++r) {
    acc_t acc = ACC_ZERO();
    for (int c = 0; c < g_in; c += 16)
      acc = fma16(w + (size_t)r * g_in + c, g_x + c, acc);
    y[r] = reduce(acc);
  }
}

/* R-row groups; chunk c of a group is R rows x 16 elements, row-major. */
static void chunked(int R, const uint16_t *w, int r0, int r1, float *y) {
  for (int r = r0; r < r1; r += R) {
    acc_t acc[16];
    for (int i = 0; i < R; ++i)
      acc[i] = ACC_ZERO();
    const uint16_t *g = w + (size_t)r * g_in;
    for (int c = 0; c < g_in; c += 16) {
      const uint16_t *u = g + (size_t)c * R;
      for (int i = 0; i < R; ++i)
        acc[i] = fma16(u + i * 16, g_x + c, acc[i]);
    }
    for (int i = 0; i < R; ++i)
      y[r + i] = reduce(acc[i]);
  }
}

static void probe(int id) {
  const size_t per = g_mat_bytes * g_mats / g_threads;
  const uint8_t *p = (const uint8_t *)g_plain + per * id;
  __m256 s = _mm256_setzero_ps();
  for (size_t i = 0; i < per; i += 256)
    for (int k = 0; k < 256; k += 32)
      s = _mm256_add_ps(s, _mm256_load_ps((const float *)(p + i + k)));
  g_sink = _mm256_cvtss_f32(s);
}

static void barrier(void) {
  const int g = atomic_load(&g_gen);
  if (atomic_fetch_add(&g_arrived, 1) == g_threads - 1) {
    atomic_store(&g_arrived, 0);
    atomic_fetch_add(&g_gen, 1);
  } else {
    while (atomic_load(&g_gen) == g)
      _mm_pause();
  }
}

static void token(int id) {
  if (g_what == PROBE) {
    probe(id);
    return;
  }
  int per = g_rows / g_threads;
  per -= per % 16;
  const int r0 = id * per, r1 = id == g_threads - 1 ? g_rows : r0 + per;
  for (int m = 0; m < g_mats; ++m) {
    const size_t off = (size_t)m * g_mat_bytes / 2;
    float *y = g_y[g_what] + (size_t)m * g_rows;
    if (g_what == ROWS8)
      rowsR(8, g_plain + off, r0, r1, y);
    else if (g_what == ROWSEQ)
      rowseq(g_plain + off, r0, r1, y);
    else if (g_what == ROWS2)
      rowsR(2, g_plain + off, r0, r1, y);
    else if (g_what == ROWS4)
      rowsR(4, g_plain + off, r0, r1, y);
    else if (g_what == CHUNK16)
      chunked(16, g_chunk16 + off, r0, r1, y);
    else
      chunked(8, g_chunk8 + off, r0, r1, y);
    barrier();
  }
}

static void *worker(void *arg) {
  const int id = (int)(intptr_t)arg;
  for (int seen = 0;;) {
    while (atomic_load(&g_go) == seen)
      _mm_pause();
    seen = atomic_load(&g_go);
    if (g_what < 0)
      return NULL;
    token(id);
    atomic_fetch_add(&g_done, 1);
  }
}

static double timed(int what) {
  g_what = what;
  atomic_store(&g_done, 0);
  const double t = now();
  atomic_fetch_add(&g_go, 1);
  token(0);
  while (atomic_load(&g_done) < g_threads - 1)
    _mm_pause();
  return now() - t;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static uint16_t *alloc_weights(size_t bytes) {
  const size_t huge = (size_t)2 << 20, size = (bytes + huge - 1) / huge * huge;
  uint16_t *p = aligned_alloc(huge, size);
  if (p)
    madvise(p, size, MADV_HUGEPAGE);
  return p;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ROWS IN [ROUNDS]  (ROWS a multiple of 16 * T, IN of 16)\n",
            argv[0]);
    return 2;
  }
  g_rows = atoi(argv[1]);
  g_in = atoi(argv[2]);
  const int rounds = argc > 3 ? atoi(argv[3]) : 9;
  if (getenv("T"))
    g_threads = atoi(getenv("T"));
  const long long mib = getenv("MiB") ? atoll(getenv("MiB")) : 1024;
  if (g_rows < 16 || g_rows % (16 * g_threads) || g_in < 16 || g_in % 16 || rounds < 1 ||
      rounds > 99 || g_threads < 1 || g_threads > 64 || mib < 1) {
    fprintf(stderr, "error: need ROWS a multiple of 16 * T, IN a multiple of 16, 1 <= ROUNDS "
                    "<= 99, 1 <= T <= 64, MiB >= 1\n");
    return 2;
  }
  g_mat_bytes = (size_t)g_rows * g_in * 2;
  g_mats = (int)((mib << 20) / g_mat_bytes);
  if (g_mats < 1)
    g_mats = 1;
  const size_t total = g_mat_bytes * g_mats, elems = total / 2;
  g_plain = alloc_weights(total);
  g_chunk16 = alloc_weights(total);
  g_chunk8 = alloc_weights(total);
  g_x = aligned_alloc(64, sizeof(float) * g_in);
  for (int v = 0; v < N_VARIANTS; ++v)
    g_y[v] = calloc((size_t)g_mats * g_rows, sizeof(float));
  if (!g_plain || !g_chunk16 || !g_chunk8 || !g_x) {
    fprintf(stderr, "error: out of memory\n");
    return 1;
  }
  uint32_t s = 12345;
  for (size_t i = 0; i < elems; ++i) { /* finite halves of magnitude 2^-8 .. 2 */
    s = s * 1664525u + 1013904223u;
    g_plain[i] = (uint16_t)(0x1c00 + (s >> 16) % 0x2400) | (uint16_t)((s >> 8 & 1) << 15);
  }
  for (int i = 0; i < g_in; ++i)
    g_x[i] = (float)(i % 13) / 13.0f - 0.5f;
  for (size_t m = 0; m < (size_t)g_mats; ++m)
    for (int r = 0; r < g_rows; ++r)
      for (int c = 0; c < g_in; ++c) {
        const size_t src = m * elems / g_mats + (size_t)r * g_in + c;
        const size_t base = m * elems / g_mats;
        g_chunk16[base + (size_t)(r / 16) * 16 * g_in + (size_t)c / 16 * 256 + (r % 16) * 16 +
                  c % 16] = g_plain[src];
        g_chunk8[base + (size_t)(r / 8) * 8 * g_in + (size_t)c / 16 * 128 + (r % 8) * 16 +
                 c % 16] = g_plain[src];
      }
  pthread_t th[64];
  for (int i = 1; i < g_threads; ++i)
    pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  double t[N_VARIANTS][99];
  for (int k = 0; k < rounds; ++k)
    for (int v = 0; v < N_VARIANTS; ++v)
      t[v][k] = timed(v);
  const double gb = total / 1e9;
  printf("f16 %d x %d, %d matrices (%.0f MiB), %d threads, median of %d\n", g_rows, g_in,
         g_mats, total / 1048576.0, g_threads, rounds);
  double probe_gbs = 0;
  for (int v = 0; v < N_VARIANTS; ++v) {
    qsort(t[v], rounds, sizeof(double), cmp);
    const double gbs = gb / t[v][rounds / 2];
    if (v == PROBE)
      probe_gbs = gbs;
    const int same = v == PROBE || !memcmp(g_y[v], g_y[ROWS8], sizeof(float) * g_mats * g_rows);
    printf("  %-28s %7.2f GB/s %6.1f %%%s\n", kNames[v], gbs, 100.0 * gbs / probe_gbs,
           same ? "" : "  (results differ from rows8!)");
  }
  g_what = -1;
  atomic_fetch_add(&g_go, 1);
  for (int i = 1; i < g_threads; ++i)
    pthread_join(th[i], NULL);
  return 0;
}
