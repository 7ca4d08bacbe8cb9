/* Differential test of the HVX micro-kernels (codegen/cpu/ukernels/hvx) against the
 * generic C kernels, both built for Hexagon and run under qemu-hexagon-static.
 *
 * The generic linear is linked renamed (gen_kiln_uk_linear*). For q8_0 and q4_0 the HVX
 * kernel quantises x to int8 blocks (hvx/linear.c), so each output y is checked
 *  - against the same int8 math in double (x quantised with ggml's q8_0 rule, d_x in fp32):
 *    |y - ref8| <= 1e-5 * sum_i |x_i w_i| (the kernels' float rounding only), and
 *  - against the generic fp32 kernel: |y - y_gen| <= 1.0001 * sum_b d_x,b / 2 * sum |w| +
 *    1e-5 * sum |x w| (the activation rounding; tests/unit/UkernelPackedTest.cpp's bound),
 * on shapes with odd block counts, rows not a multiple of 8 or 32, partial last blocks,
 * one and several tokens, a row length whose quantised x takes the 1-token tile and one
 * that takes the generic path. Results must be bit-identical with 1 and 3 tasks, and the
 * fused store modes (segments, residual, SwiGLU) must equal the plain result put through
 * the same float steps. The other formats (f32, f16, q4_1, q3_0, q4_K, q5_K, q6_K) fall back
 * to the generic code and must equal it bit for bit; repacked, q4_1 (r16, r32) and q4_K, q5_K
 * and q6_K (r16) have HVX kernels that must equal the generic ones bit for bit too. Weights
 * end right before an unmapped page, so a read past the last row faults. Exit status 0 when
 * everything passes. */
#include "common.h"
#include "fs.h"
#include "kiln/quant_packed.h"
#include "ukernel_abi.h"

void gen_kiln_uk_linear(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x, int32_t n,
                        int32_t in, const uint8_t *w, int64_t row_stride, int32_t out_features,
                        float *y);

void gen_kiln_uk_linear_packed(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x,
                               int32_t n, int32_t in, const uint8_t *w, int64_t group_stride,
                               int32_t out_features, float *y, uint8_t *qscratch,
                               int32_t shard_groups);

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t rnd32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
static float rndf(float a) { return ((float)(rnd32() & 0xffffff) / 16777216.0f * 2.0f - 1.0f) * a; }
static double dabs(double v) { return v < 0 ? -v : v; }

static int failures, checks;
#define FAIL(...)                                                                              \
  do {                                                                                         \
    if (failures++ < 20)                                                                       \
      kiln_fs_printf(__VA_ARGS__);                                                             \
  } while (0)

/* Runs tasks serially, but lets the kernel split the rows into 3 tasks. */
static void serial_for(void *pool, kiln_task_fn_t fn, void *arg, int32_t n_tasks) {
  for (int32_t t = 0; t < n_tasks; ++t)
    fn(arg, t, n_tasks);
}

/* `bytes` bytes ending exactly at an unmapped page. qemu-hexagon's target pages are 64 KiB
 * (munmap of a 4 KiB piece fails), so the guard is 64 KiB. */
#define GUARD 65536u
typedef struct {
  uint8_t *map;
  size_t len;
} guarded_t;
static uint8_t *guarded_alloc(guarded_t *g, size_t bytes) {
  const size_t pages = (bytes + GUARD - 1) / GUARD + 1;
  g->len = pages * GUARD;
  g->map = kiln_fs_mmap(0, g->len, KILN_FS_PROT_READ | KILN_FS_PROT_WRITE,
                        KILN_FS_MAP_PRIVATE | KILN_FS_MAP_ANONYMOUS, -1, 0);
  if (g->map == KILN_FS_MAP_FAILED) {
    kiln_fs_puts(2, "mmap failed\n");
    kiln_fs_exit(2);
  }
  if (kiln_fs_munmap(g->map + g->len - GUARD, GUARD) != 0) {
    kiln_fs_puts(2, "munmap of the guard page failed\n");
    kiln_fs_exit(2);
  }
  return g->map + g->len - GUARD - bytes;
}
static void guarded_free(guarded_t *g) { kiln_fs_munmap(g->map, g->len - GUARD); }

static int64_t row_bytes(uint32_t f, int32_t in) {
  const int32_t nb = (in + 31) / 32;
  if (kiln_uk_is_kquant(f))
    return kiln_uk_kquant_block_bytes(f) * ((in + 255) / 256);
  switch (f) {
  case KILN_GGML_TYPE_F32: return 4 * (int64_t)in;
  case KILN_GGML_TYPE_F16: return 2 * (int64_t)in;
  case KILN_GGML_TYPE_Q8_0: return 34 * (int64_t)nb;
  case KILN_GGML_TYPE_Q4_0: return 18 * (int64_t)nb;
  case KILN_GGML_TYPE_Q4_1: return 20 * (int64_t)nb;
  default: return 14 * (int64_t)nb; /* q3_0 */
  }
}

static uint16_t rnd_half_scale(void) { return kiln_uk_fp32_to_fp16(rndf(0.05f) + 0.001f); }

/* Random row of a format; block padding past `in` is zero codes. */
static void fill_row(uint32_t f, int32_t in, uint8_t *row) {
  const int32_t nb = (in + 31) / 32;
  if (f == KILN_GGML_TYPE_F32) {
    for (int32_t i = 0; i < in; ++i) {
      const float v = rndf(1.0f);
      for (int32_t j = 0; j < 4; ++j)
        row[4 * i + j] = (uint8_t)(kiln_uk_f32_bits(v) >> (8 * j));
    }
    return;
  }
  if (f == KILN_GGML_TYPE_F16) {
    for (int32_t i = 0; i < in; ++i) {
      const uint16_t h = kiln_uk_fp32_to_fp16(rndf(1.0f));
      row[2 * i] = (uint8_t)h, row[2 * i + 1] = (uint8_t)(h >> 8);
    }
    return;
  }
  if (kiln_uk_is_kquant(f)) { /* random codes and sub-block scales, finite super-block scales */
    const int64_t bb = kiln_uk_kquant_block_bytes(f), bytes = row_bytes(f, in);
    for (int64_t j = 0; j < bytes; ++j)
      row[j] = (uint8_t)rnd32();
    for (int64_t p = 0; p < bytes; p += bb) {
      const uint16_t d = rnd_half_scale(), m = rnd_half_scale();
      uint8_t *s = row + p + (f == KILN_GGML_TYPE_Q6_K ? 208 : 0);
      s[0] = (uint8_t)d, s[1] = (uint8_t)(d >> 8);
      if (f != KILN_GGML_TYPE_Q6_K)
        s[2] = (uint8_t)m, s[3] = (uint8_t)(m >> 8);
    }
    return;
  }
  const int32_t bb = (int32_t)row_bytes(f, 32);
  for (int32_t b = 0; b < nb; ++b) {
    uint8_t *p = row + b * bb;
    for (int32_t j = 0; j < bb; ++j)
      p[j] = (uint8_t)rnd32();
    const uint16_t d = rnd_half_scale();
    p[0] = (uint8_t)d, p[1] = (uint8_t)(d >> 8);
    if (f == KILN_GGML_TYPE_Q4_1) {
      const uint16_t m = kiln_uk_fp32_to_fp16(rndf(0.1f));
      p[2] = (uint8_t)m, p[3] = (uint8_t)(m >> 8);
    }
    const int32_t valid = KILN_UK_MIN(32, in - b * 32);
    if (valid == 32)
      continue;
    /* zero the padding codes (q8_0: byte 2 + j; q4_0: nibbles) */
    for (int32_t j = valid; j < 32; ++j) {
      if (f == KILN_GGML_TYPE_Q8_0) {
        p[2 + j] = 0;
      } else if (f == KILN_GGML_TYPE_Q4_0) {
        /* code 8 decodes to 0 */
        uint8_t *c = p + 2 + (j & 15);
        *c = j < 16 ? (uint8_t)((*c & 0xf0) | 8) : (uint8_t)((*c & 0x0f) | 0x80);
      }
    }
  }
}

/* Weight element i of a q8_0/q4_0 row as (code, scale). */
static int32_t code_at(uint32_t f, const uint8_t *row, int32_t i, float *d) {
  const int32_t bb = f == KILN_GGML_TYPE_Q8_0 ? 34 : 18;
  const uint8_t *p = row + (i / 32) * bb;
  *d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(p));
  const int32_t j = i % 32;
  if (f == KILN_GGML_TYPE_Q8_0)
    return (int8_t)p[2 + j];
  return (j < 16 ? (p[2 + j] & 15) : (p[2 + j - 16] >> 4)) - 8;
}

/* The q8_0 rule on one block, as packed_quantize_row (same float operations). */
static float quant_block(const float *x, int32_t count, int32_t *q) {
  float amax = 0.0f;
  for (int32_t j = 0; j < count; ++j) {
    const float v = x[j] < 0.0f ? -x[j] : x[j];
    amax = v > amax ? v : amax;
  }
  const float db = amax / 127.0f;
  const float id = db != 0.0f ? 1.0f / db : 0.0f;
  for (int32_t j = 0; j < 32; ++j) {
    const float v = j < count ? x[j] * id : 0.0f;
    const float r = (v + 12582912.0f) - 12582912.0f;
    q[j] = (int32_t)r;
  }
  return db;
}

static int bit_equal(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (kiln_uk_f32_bits(a[i]) != kiln_uk_f32_bits(b[i]))
      return 0;
  return 1;
}

static const char *fname(uint32_t f) {
  switch (f) {
  case KILN_GGML_TYPE_F32: return "f32";
  case KILN_GGML_TYPE_F16: return "f16";
  case KILN_GGML_TYPE_Q8_0: return "q8_0";
  case KILN_GGML_TYPE_Q4_0: return "q4_0";
  case KILN_GGML_TYPE_Q4_1: return "q4_1";
  case KILN_GGML_TYPE_Q4_K: return "q4_K";
  case KILN_GGML_TYPE_Q5_K: return "q5_K";
  case KILN_GGML_TYPE_Q6_K: return "q6_K";
  default: return "q3_0";
  }
}

static double max_err8, max_err32, max_errp;
static int verbose;

/* generic_path: the kernel must take the generic (fp32) code for this shape */
static void check_linear(uint32_t f, int32_t n, int32_t in, int32_t out, int generic_path) {
  const int64_t rs = row_bytes(f, in);
  if (verbose)
    kiln_fs_printf("%s n=%d in=%d out=%d\n", fname(f), n, in, out);
  guarded_t gw;
  /* weights at any alignment: every 3rd shape starts at an odd address (1 byte before the
   * guard then), the others end exactly at the guard */
  const int odd = (in + out) % 3 == 0;
  uint8_t *w = guarded_alloc(&gw, (size_t)(rs * out) + (size_t)odd);
  for (int32_t r = 0; r < out; ++r)
    fill_row(f, in, w + r * rs);
  /* x ends right before NaN sentinels: a read past `in` of the last token shows as NaN */
  float *x = kiln_fs_malloc(sizeof(float) * ((size_t)n * in + 16));
  for (int64_t i = 0; i < (int64_t)n * in; ++i)
    x[i] = rndf(1.5f);
  for (int32_t i = 0; i < 16; ++i)
    x[(int64_t)n * in + i] = kiln_uk_f32_from_bits(0x7fc00000u);
  const size_t ny = (size_t)n * out;
  float *y1 = kiln_fs_malloc(4 * ny), *y3 = kiln_fs_malloc(4 * ny), *yg = kiln_fs_malloc(4 * ny);
  kiln_exec_ctx_t three = {0, 3, 0, 0, 0, serial_for, 0, 0};
  kiln_uk_linear(0, f, x, n, in, w, rs, out, y1);
  if (verbose)
    kiln_fs_printf("  hvx done\n");
  kiln_uk_linear(&three, f, x, n, in, w, rs, out, y3);
  gen_kiln_uk_linear(0, f, x, n, in, w, rs, out, yg);
  ++checks;
  if (!bit_equal(y1, y3, (int64_t)ny))
    FAIL("%s n=%d in=%d out=%d: 3 tasks changed the result\n", fname(f), n, in, out);
  if (generic_path || (f != KILN_GGML_TYPE_Q8_0 && f != KILN_GGML_TYPE_Q4_0)) {
    if (!bit_equal(y1, yg, (int64_t)ny))
      FAIL("%s n=%d in=%d out=%d: fallback differs from generic\n", fname(f), n, in, out);
  } else {
    const int32_t nb = (in + 31) / 32;
    int32_t *qx = kiln_fs_malloc(sizeof(int32_t) * (size_t)nb * 32);
    float *dx = kiln_fs_malloc(sizeof(float) * (size_t)nb);
    for (int32_t t = 0; t < n; ++t) {
      const float *xt = x + (int64_t)t * in;
      for (int32_t b = 0; b < nb; ++b)
        dx[b] = quant_block(xt + 32 * b, KILN_UK_MIN(32, in - 32 * b), qx + 32 * b);
      for (int32_t o = 0; o < out; ++o) {
        const uint8_t *row = w + o * rs;
        double ref8 = 0, mag = 0, bound = 0;
        for (int32_t b = 0; b < nb; ++b) {
          double isum = 0, wabs = 0, dw = 0;
          for (int32_t j = 0; j < 32 && 32 * b + j < in; ++j) {
            float d;
            const int32_t c = code_at(f, row, 32 * b + j, &d);
            dw = d;
            isum += (double)c * qx[32 * b + j];
            wabs += dabs((double)c * d);
            mag += dabs((double)c * d * xt[32 * b + j]);
          }
          ref8 += isum * dw * dx[b];
          bound += wabs * dx[b] * 0.5;
        }
        const double got = y1[(int64_t)t * out + o], gen = yg[(int64_t)t * out + o];
        const double e8 = dabs(got - ref8), e32 = dabs(got - gen);
        const double tol8 = 1e-5 * mag + 1e-30, tol32 = 1.0001 * bound + 1e-5 * mag + 1e-30;
        if (!(e8 <= tol8))
          FAIL("%s n=%d in=%d out=%d y[%d,%d] = %.6f, int8 math %.6f (|xw| %.4f)\n", fname(f), n,
               in, out, t, o, got, ref8, mag);
        if (!(e32 <= tol32))
          FAIL("%s n=%d in=%d out=%d y[%d,%d] = %.6f, generic %.6f (bound %.6f)\n", fname(f), n,
               in, out, t, o, got, gen, tol32);
        if (e8 / tol8 * 1e-5 > max_err8)
          max_err8 = e8 / tol8 * 1e-5;
        if (e32 / (bound + 1e-30) > max_err32)
          max_err32 = e32 / (bound + 1e-30);
      }
    }
    kiln_fs_free(qx);
    kiln_fs_free(dx);
  }
  /* fused store modes against the plain result through the same float steps */
  if (out >= 4) {
    const int32_t w0 = out / 2 - 1, w1 = 2, w2 = out - w0 - w1;
    float *s0 = kiln_fs_malloc(4 * (size_t)n * (size_t)out), *s1 = kiln_fs_malloc(4 * (size_t)n * 2),
          *s2 = kiln_fs_malloc(4 * (size_t)n * (size_t)out);
    kiln_uk_linear_fused(&three, f, x, n, in, w, rs, out, s0, w0, s1, w1, s2, w2, 0, 0);
    for (int32_t t = 0; t < n; ++t)
      for (int32_t o = 0; o < out; ++o) {
        const float v = o < w0          ? s0[t * w0 + o]
                        : o < w0 + w1   ? s1[t * w1 + o - w0]
                                        : s2[t * w2 + o - w0 - w1];
        if (kiln_uk_f32_bits(v) != kiln_uk_f32_bits(y1[t * out + o]))
          FAIL("%s segments differ at [%d,%d]\n", fname(f), t, o);
      }
    /* residual in place */
    for (int64_t i = 0; i < (int64_t)ny; ++i)
      s2[i] = rndf(2.0f);
    float *res = kiln_fs_malloc(4 * ny);
    for (int64_t i = 0; i < (int64_t)ny; ++i)
      res[i] = s2[i];
    kiln_uk_linear_fused(&three, f, x, n, in, w, rs, out, s2, out, 0, 0, 0, 0, s2, 0);
    for (int64_t i = 0; i < (int64_t)ny; ++i) {
      const float want = y1[i] + res[i];
      if (kiln_uk_f32_bits(s2[i]) != kiln_uk_f32_bits(want))
        FAIL("%s residual differs at %d\n", fname(f), (int)i);
    }
    /* SwiGLU over an even row count */
    const int32_t rows = out & ~1;
    kiln_uk_linear_fused(&three, f, x, n, in, w, rs, rows, s0, rows / 2, 0, 0, 0, 0, 0, 1);
    for (int32_t t = 0; t < n; ++t)
      for (int32_t j = 0; j < rows / 2; ++j) {
        const float g = y1[t * out + 2 * j], u = y1[t * out + 2 * j + 1];
        const float want = (g / (1.0f + kiln_uk_expf(-g))) * u;
        if (kiln_uk_f32_bits(s0[t * (rows / 2) + j]) != kiln_uk_f32_bits(want))
          FAIL("%s swiglu differs at [%d,%d]\n", fname(f), t, j);
      }
    kiln_fs_free(s0), kiln_fs_free(s1), kiln_fs_free(s2), kiln_fs_free(res);
  }
  kiln_fs_free(x), kiln_fs_free(y1), kiln_fs_free(y3), kiln_fs_free(yg);
  guarded_free(&gw);
}

/* ggml rows -> the r16 / r32 layout (kiln/quant_packed.h), written here from the layout's
 * description rather than with kiln_repack_packed, so the test also checks the reading. */
static void repack_rows(uint32_t ptype, const uint8_t *src, int64_t rs, int32_t rows, int32_t in,
                        uint8_t *dst, int64_t gstride) {
  const int32_t R = (int32_t)kiln_packed_rows(ptype), chunk = 4 * R;
  const int32_t nb = (in + 31) / 32, groups = (rows + R - 1) / R;
  const uint32_t base = kiln_packed_base_type(ptype);
  const int32_t bb = (int32_t)row_bytes(base, 32);
  for (int64_t i = 0; i < groups * gstride; ++i)
    dst[i] = 0;
  for (int32_t g = 0; g < groups; ++g)
    for (int32_t b = 0; b < nb; ++b)
      for (int32_t r = 0; r < R && g * R + r < rows; ++r) {
        const uint8_t *blk = src + (int64_t)(g * R + r) * rs + (int64_t)b * bb;
        uint8_t *grp = dst + g * gstride;
        uint8_t *sc = grp + kiln_packed_scales_offset(ptype, (uint64_t)b) + 2 * r;
        sc[0] = blk[0], sc[1] = blk[1];
        if (base == KILN_GGML_TYPE_Q4_1) {
          uint8_t *mn = grp + kiln_packed_mins_offset(ptype, (uint64_t)b) + 2 * r;
          mn[0] = blk[2], mn[1] = blk[3];
        }
        uint8_t *codes = grp + kiln_packed_codes_offset(ptype, (uint64_t)b);
        if (base == KILN_GGML_TYPE_Q8_0) {
          for (int32_t e = 0; e < 32; ++e)
            codes[(e / 4) * chunk + 4 * r + e % 4] = (uint8_t)(blk[2 + e] ^ 0x80);
        } else {
          const uint8_t *qs = blk + (base == KILN_GGML_TYPE_Q4_1 ? 4 : 2);
          for (int32_t e = 0; e < 16; ++e)
            codes[(e / 4) * chunk + 4 * r + e % 4] = qs[e];
        }
      }
}

/* kiln_uk_linear_packed (HVX) against the generic packed kernel and the HVX ggml-layout
 * kernel (the same int8 math: equal up to float rounding), bit-equal to the generic kernel
 * for q4_1 and the K-quants (the same float steps), bit-equal with 1 and 3 tasks and with weight shards of 1 and 3
 * groups (qemu runs l2fetch as a no-op: this checks that the shards cover every group
 * once), the r32 layout bit-equal to r16 (the same float steps per row and block), and the
 * fused store modes equal to the plain result through the same float steps. */
static void check_packed(uint32_t ptype, int32_t n, int32_t in, int32_t out) {
  const uint32_t base = kiln_packed_base_type(ptype);
  const int64_t rs = row_bytes(base, in);
  uint8_t *src = kiln_fs_malloc((size_t)(rs * out));
  for (int32_t r = 0; r < out; ++r)
    fill_row(base, in, src + r * rs);
  const int64_t gstride = (int64_t)kiln_packed_group_bytes(ptype, (uint64_t)in);
  const int32_t R = (int32_t)kiln_packed_rows(ptype), groups = (out + R - 1) / R;
  guarded_t gw;
  /* ends at the guard (a page boundary), so an r32 matrix starts 128-byte aligned */
  uint8_t *w = guarded_alloc(&gw, (size_t)(gstride * groups));
  if (kiln_is_packed_kquant(ptype)) { /* runtime-min's packer (RepackIsLossless checks it) */
    if (kiln_repack_packed(ptype, src, (uint64_t)rs, (uint64_t)out, (uint64_t)in, w) !=
        KILN_STATUS_OK)
      FAIL("%s_r16 in=%d out=%d: kiln_repack_packed failed\n", fname(base), in, out);
  } else {
    repack_rows(ptype, src, rs, out, in, w, gstride);
  }
  float *x = kiln_fs_malloc(sizeof(float) * ((size_t)n * in + 16));
  for (int64_t i = 0; i < (int64_t)n * in; ++i)
    x[i] = rndf(1.5f);
  for (int32_t i = 0; i < 16; ++i)
    x[(int64_t)n * in + i] = kiln_uk_f32_from_bits(0x7fc00000u);
  uint8_t *qs = kiln_fs_aligned_alloc(64, (size_t)n * kiln_packed_act_stride((uint64_t)in));
  const size_t ny = (size_t)n * out;
  float *y1 = kiln_fs_malloc(4 * ny), *y3 = kiln_fs_malloc(4 * ny), *yg = kiln_fs_malloc(4 * ny),
        *yl = kiln_fs_malloc(4 * ny);
  kiln_exec_ctx_t three = {0, 3, 0, 0, 0, serial_for, 0, 0};
  kiln_uk_linear_packed(0, ptype, x, n, in, w, gstride, out, y1, qs, 0);
  kiln_uk_linear_packed(&three, ptype, x, n, in, w, gstride, out, y3, qs, 0);
  gen_kiln_uk_linear_packed(0, ptype, x, n, in, w, gstride, out, yg, qs, 0);
  ++checks;
  if (!bit_equal(y1, y3, (int64_t)ny))
    FAIL("%s_r%d n=%d in=%d out=%d: 3 tasks changed the result\n", fname(base), R, n, in, out);
  for (int32_t shard = 1; shard <= 3; shard += 2) { /* an l2fetch per shard: no change */
    for (int64_t i = 0; i < (int64_t)ny; ++i) /* a group the shards skip stays NaN */
      y3[i] = kiln_uk_f32_from_bits(0x7fc00000u);
    kiln_uk_linear_packed(&three, ptype, x, n, in, w, gstride, out, y3, qs, shard);
    if (!bit_equal(y1, y3, (int64_t)ny))
      FAIL("%s_r%d n=%d in=%d out=%d: shards of %d groups changed the result\n", fname(base), R,
           n, in, out, shard);
  }
  if (R == 32) { /* the same weights in 16-row groups */
    const uint32_t p16 = kiln_packed_type(base, 16);
    const int64_t gs16 = (int64_t)kiln_packed_group_bytes(p16, (uint64_t)in);
    uint8_t *w16 = kiln_fs_aligned_alloc(128, (size_t)(gs16 * ((out + 15) / 16)));
    repack_rows(p16, src, rs, out, in, w16, gs16);
    float *y16 = kiln_fs_malloc(4 * ny);
    kiln_uk_linear_packed(0, p16, x, n, in, w16, gs16, out, y16, qs, 0);
    if (!bit_equal(y1, y16, (int64_t)ny))
      FAIL("%s_r32 n=%d in=%d out=%d: differs from the r16 layout\n", fname(base), n, in, out);
    kiln_fs_free(w16), kiln_fs_free(y16);
  }
  if (base == KILN_GGML_TYPE_Q4_1 || kiln_is_packed_kquant(ptype)) {
    if (!bit_equal(y1, yg, (int64_t)ny))
      FAIL("%s_r%d n=%d in=%d out=%d: differs from generic\n", fname(base), R, n, in, out);
  } else {
    kiln_uk_linear(0, base, x, n, in, src, rs, out, yl);
    for (int32_t t = 0; t < n; ++t)
      for (int32_t o = 0; o < out; ++o) {
        double mag = 0;
        for (int32_t i = 0; i < in; ++i) {
          float d;
          const int32_t c = code_at(base, src + o * rs, i, &d);
          mag += dabs((double)c * d * x[(int64_t)t * in + i]);
        }
        const double got = y1[t * out + o];
        const double eg = dabs(got - yg[t * out + o]), el = dabs(got - yl[t * out + o]);
        if (!(eg <= 1e-5 * mag + 1e-30) || !(el <= 1e-5 * mag + 1e-30))
          FAIL("%s_r%d n=%d in=%d out=%d y[%d,%d] = %.6f, generic packed %.6f, hvx linear "
               "%.6f\n",
               fname(base), R, n, in, out, t, o, got, yg[t * out + o], yl[t * out + o]);
        if (eg / (mag + 1e-30) > max_errp)
          max_errp = eg / (mag + 1e-30);
      }
  }
  if (out >= 4) { /* fused: residual in place and SwiGLU */
    float *s0 = kiln_fs_malloc(4 * ny), *res = kiln_fs_malloc(4 * ny);
    for (int64_t i = 0; i < (int64_t)ny; ++i)
      s0[i] = res[i] = rndf(2.0f);
    kiln_uk_linear_packed_fused(&three, ptype, x, n, in, w, gstride, out, s0, out, 0, 0, 0, 0,
                                s0, 0, qs, 0);
    for (int64_t i = 0; i < (int64_t)ny; ++i)
      if (kiln_uk_f32_bits(s0[i]) != kiln_uk_f32_bits(y1[i] + res[i]))
        FAIL("r%d residual differs at %d\n", R, (int)i);
    const int32_t rows = out & ~1;
    kiln_uk_linear_packed_fused(&three, ptype, x, n, in, w, gstride, rows, s0, rows / 2, 0, 0, 0,
                                0, 0, 1, qs, 0);
    for (int32_t t = 0; t < n; ++t)
      for (int32_t j = 0; j < rows / 2; ++j) {
        const float g = y1[t * out + 2 * j], u = y1[t * out + 2 * j + 1];
        const float want = (g / (1.0f + kiln_uk_expf(-g))) * u;
        if (kiln_uk_f32_bits(s0[t * (rows / 2) + j]) != kiln_uk_f32_bits(want))
          FAIL("r%d swiglu differs at [%d,%d]\n", R, t, j);
      }
    kiln_fs_free(s0), kiln_fs_free(res);
  }
  kiln_fs_free(src), kiln_fs_free(x), kiln_fs_free(qs);
  kiln_fs_free(y1), kiln_fs_free(y3), kiln_fs_free(yg), kiln_fs_free(yl);
  guarded_free(&gw);
}

int kiln_fs_main(int argc, char **argv) {
  verbose = argc > 1 && argv[1][0] == '-' && argv[1][1] == 'v'; /* -v: print each case */
  static const int32_t ns[] = {1, 2, 5};
  static const int32_t ins[] = {7, 32, 100, 160, 256, 288, 1000};
  static const int32_t outs[] = {1, 5, 8, 13, 37};
  static const uint32_t q[] = {KILN_GGML_TYPE_Q8_0, KILN_GGML_TYPE_Q4_0};
  for (int32_t fi = 0; fi < 2; ++fi)
    for (uint32_t a = 0; a < sizeof ns / sizeof ns[0]; ++a)
      for (uint32_t b = 0; b < sizeof ins / sizeof ins[0]; ++b)
        for (uint32_t c = 0; c < sizeof outs / sizeof outs[0]; ++c)
          check_linear(q[fi], ns[a], ins[b], outs[c], 0);
  for (int32_t fi = 0; fi < 2; ++fi) {
    check_linear(q[fi], 1, 4096, 67, 0);   /* a larger decode shape */
    check_linear(q[fi], 9, 256, 40, 0);    /* 4 + 4 + 1 token tiles */
    check_linear(q[fi], 3, 20000, 3, 0);   /* x fits 1-2 tokens per tile (q4_0 / q8_0) */
    check_linear(q[fi], 2, 70000, 2, 1);   /* does not fit: the generic path */
  }
  static const uint32_t others[] = {KILN_GGML_TYPE_F32,  KILN_GGML_TYPE_F16,  KILN_GGML_TYPE_Q4_1,
                                    KILN_TYPE_Q3_0,      KILN_GGML_TYPE_Q4_K, KILN_GGML_TYPE_Q5_K,
                                    KILN_GGML_TYPE_Q6_K};
  for (uint32_t fi = 0; fi < sizeof others / sizeof others[0]; ++fi) {
    check_linear(others[fi], 1, 100, 13, 1);
    check_linear(others[fi], 3, 64, 8, 1);
    check_linear(others[fi], 2, 300, 9, 1); /* a second, partial K-quant super-block */
  }
  static const uint32_t pk[] = {KILN_TYPE_Q8_0_R16, KILN_TYPE_Q4_0_R16, KILN_TYPE_Q4_1_R16,
                                KILN_TYPE_Q8_0_R32, KILN_TYPE_Q4_0_R32, KILN_TYPE_Q4_1_R32};
  static const int32_t pins[] = {32, 64, 96, 100, 256, 1000};
  static const int32_t pouts[] = {1, 16, 21, 48};
  for (int32_t fi = 0; fi < 6; ++fi)
    for (uint32_t a = 0; a < 2; ++a)
      for (uint32_t b = 0; b < sizeof pins / sizeof pins[0]; ++b)
        for (uint32_t c = 0; c < sizeof pouts / sizeof pouts[0]; ++c)
          check_packed(pk[fi], a ? 3 : 1, pins[b], pouts[c]);
  /* K-quants: whole super-blocks; 6 tokens are a tile of 4 and one of 2 */
  static const uint32_t kq[] = {KILN_TYPE_Q4_K_R16, KILN_TYPE_Q5_K_R16, KILN_TYPE_Q6_K_R16};
  static const int32_t kns[] = {1, 6}, kins[] = {256, 768};
  for (int32_t fi = 0; fi < 3; ++fi)
    for (uint32_t a = 0; a < 2; ++a)
      for (uint32_t b = 0; b < 2; ++b)
        for (uint32_t c = 0; c < sizeof pouts / sizeof pouts[0]; ++c)
          check_packed(kq[fi], kns[a], kins[b], pouts[c]);
  kiln_fs_printf("ukernel_diff: r16/r32 max |y - generic packed| / sum|xw| = %.3f e-6\n",
                 max_errp * 1e6);
  kiln_fs_printf("ukernel_diff: %d cases, %d failures; max |y - int8 math| / sum|xw| = %.3f e-6, "
                 "max |y - generic fp32| / activation bound = %.4f\n",
                 checks, failures, max_err8 * 1e6, max_err32);
  return failures ? 1 : 0;
}
