/* kiln micro-kernels: helpers shared by every implementation (internal, not an ABI).
 *
 * Everything here is static inline and free of libc/libm: the kernels are compiled
 * -ffreestanding into bitcode that ends up in code with no C library behind it. Bit casts
 * go through unions, unaligned weight loads through 1-byte-aligned typedefs, and sqrt
 * through __builtin_sqrtf (an instruction with -fno-math-errno).
 *
 * Also usable from C++ (the unit tests include it to measure kiln_uk_expf).
 */
#ifndef KILN_CODEGEN_CPU_UKERNELS_COMMON_H_
#define KILN_CODEGEN_CPU_UKERNELS_COMMON_H_

#include <stdint.h>

#include "kiln/abi.h"
#include "kiln/quant.h"
#include "kiln/quant_blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_UK_INLINE static inline __attribute__((always_inline))
#define KILN_UK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KILN_UK_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Unrolling on request. KILN_UK_UNROLL fully unrolls a loop with a constant trip count: a
 * register tile's token loops, so that acc[t] lives in registers (clang otherwise keeps it
 * on the stack: x86 prefill 17 -> 40+ GMAC/s once unrolled). KILN_UK_NO_UNROLL keeps a
 * loop rolled where unrolled copies would need more registers than the ISA has. */
#if defined(__clang__)
#define KILN_UK_UNROLL _Pragma("clang loop unroll(full)")
#define KILN_UK_NO_UNROLL _Pragma("clang loop unroll(disable)")
#elif defined(__GNUC__)
#define KILN_UK_UNROLL _Pragma("GCC unroll 8")
#define KILN_UK_NO_UNROLL _Pragma("GCC unroll 1")
#else
#define KILN_UK_UNROLL
#define KILN_UK_NO_UNROLL
#endif

/* Weight rows are at w + r * row_stride and need not be aligned: these typedefs let the
 * kernels load from any address (one unaligned load on x86/arm64, never a call). */
typedef float kiln_uk_uf32_t __attribute__((aligned(1), may_alias));
typedef uint16_t kiln_uk_uu16_t __attribute__((aligned(1), may_alias));
typedef uint32_t kiln_uk_uu32_t __attribute__((aligned(1), may_alias));

KILN_UK_INLINE uint32_t kiln_uk_f32_bits(float f) {
  union { float f; uint32_t u; } c;
  c.f = f;
  return c.u;
}

KILN_UK_INLINE float kiln_uk_f32_from_bits(uint32_t u) {
  union { float f; uint32_t u; } c;
  c.u = u;
  return c.f;
}

/* IEEE half -> float, exact for every input (subnormals, inf, NaN with its payload, quiet),
 * branch-free so loops over it vectorise. The float multiply rebiases normals and the
 * magic subtraction builds subnormals (Maratea's FP16 method, as ggml's scalar path);
 * both are exact unless the FPU flushes denormals, which kiln never enables. */
KILN_UK_INLINE float kiln_uk_fp16_to_fp32(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normalized = kiln_uk_f32_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = kiln_uk_f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t bits = two_w < (1u << 27) ? kiln_uk_f32_bits(denormalized)
                                           : kiln_uk_f32_bits(normalized);
  return kiln_uk_f32_from_bits(sign | bits);
}

/* float -> IEEE half, round to nearest even (subnormals included), as Eigen::half and
 * F16C's vcvtps2ph; NaN becomes a quiet NaN. Maratea's FP16 method, as ggml's scalar
 * path: the two multiplies round the mantissa at the half's precision, the add builds the
 * exponent. Separate statements so no FMA contraction changes the rounding. */
KILN_UK_INLINE uint16_t kiln_uk_fp32_to_fp16(float f) {
  const uint32_t w = kiln_uk_f32_bits(f);
  float base = kiln_uk_f32_from_bits(w & 0x7FFFFFFFu) * 0x1.0p+112f;
  base = base * 0x1.0p-110f;
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;
  const float magic = kiln_uk_f32_from_bits((bias >> 1) + 0x07800000u);
  base = magic + base;
  const uint32_t bits = kiln_uk_f32_bits(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

/* Little-endian 16-bit load from any address (block scales sit at odd offsets). */
KILN_UK_INLINE uint16_t kiln_uk_load_u16(const uint8_t *p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}

/* Little-endian 32-bit load from any address. */
KILN_UK_INLINE uint32_t kiln_uk_load_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of one 32-element block of the block formats the kernels read (q8_0, q4_0, q4_1,
 * q3_0). */
KILN_UK_INLINE int64_t kiln_uk_block_bytes(uint32_t format) {
  return format == KILN_GGML_TYPE_Q4_0   ? (int64_t)sizeof(kiln_block_q4_0_t)
         : format == KILN_GGML_TYPE_Q4_1 ? (int64_t)sizeof(kiln_block_q4_1_t)
         : format == KILN_TYPE_Q3_0      ? (int64_t)sizeof(kiln_block_q3_0_t)
                                         : (int64_t)sizeof(kiln_block_q8_0_t);
}

/* Decodes one whole q3_0 block (kiln/quant_blocks.h) into dst[0..32): (q - 4) * d, exact
 * in float, so equal to kiln_dequantize. Low bits of element j: bits 2*(j/8) of qs[j%8];
 * high bit: bit j of the little-endian qh. */
KILN_UK_INLINE void kiln_uk_decode_q3(const uint8_t *b, float *dst) {
  const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b));
  const uint8_t *qs = b + 2;
  const uint32_t qh = *(const kiln_uk_uu32_t *)(b + 10);
  for (int32_t j = 0; j < 32; ++j) {
    const int32_t q = ((qs[j & 7] >> (2 * (j >> 3))) & 3) | (int32_t)((qh >> j) & 1u) << 2;
    dst[j] = (float)(q - 4) * d;
  }
}

/* Decodes one whole q4_0 or q4_1 block (b: its bytes, any alignment) into dst[0..32), the
 * values kiln_dequantize gives: element j < 16 is the low nibble of qs[j], element j + 16
 * the high one; q4_0 is (q - 8) * d, q4_1 is q * d + m. Bit-exact with or without FMA
 * contraction: q * d is exact in float (an 11-bit scale times a 4-bit quant). */
KILN_UK_INLINE void kiln_uk_decode_q4(uint32_t format, const uint8_t *b, float *dst) {
  const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b));
  if (format == KILN_GGML_TYPE_Q4_0) {
    const uint8_t *qs = b + 2;
    for (int32_t j = 0; j < 16; ++j) {
      dst[j] = (float)((qs[j] & 15) - 8) * d;
      dst[j + 16] = (float)((qs[j] >> 4) - 8) * d;
    }
  } else {
    const float m = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b + 2));
    const uint8_t *qs = b + 4;
    for (int32_t j = 0; j < 16; ++j) {
      dst[j] = (float)(qs[j] & 15) * d + m;
      dst[j + 16] = (float)(qs[j] >> 4) * d + m;
    }
  }
}

KILN_UK_INLINE int32_t kiln_uk_is_kquant(uint32_t format) {
  return format == KILN_GGML_TYPE_Q4_K || format == KILN_GGML_TYPE_Q5_K ||
         format == KILN_GGML_TYPE_Q6_K;
}

/* Bytes of one 256-element super-block of q4_K, q5_K or q6_K. */
KILN_UK_INLINE int64_t kiln_uk_kquant_block_bytes(uint32_t format) {
  return format == KILN_GGML_TYPE_Q4_K   ? (int64_t)sizeof(kiln_block_q4_K_t)
         : format == KILN_GGML_TYPE_Q5_K ? (int64_t)sizeof(kiln_block_q5_K_t)
                                         : (int64_t)sizeof(kiln_block_q6_K_t);
}

/* The 6-bit scale and min of sub-block j (0..7) from q4_K/q5_K's 12-byte packing s: j < 4
 * in the low bits of s[j] and s[j + 4], j >= 4 in the nibbles of s[j + 4] with their top
 * two bits in those of s[j - 4] and s[j]. */
KILN_UK_INLINE void kiln_uk_kquant_scale_min(const uint8_t *s, int32_t j, int32_t *sc,
                                             int32_t *m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
    *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
}

/* Decodes elements [i0, i0 + 32) of a q4_K, q5_K or q6_K row (i0 a multiple of 32) into
 * dst[0..32), the values kiln_dequantize gives (dequant_kquants.c): a 32-element group is
 * one sub-block of q4_K/q5_K (one 6-bit scale and min) and two of q6_K (an int8 scale per
 * 16). q4_K/q5_K: (d*sc)*q - dmin*m, where d*sc*q and dmin*m are exact in float, so FMA
 * contraction cannot change the result; q6_K: (d*sc)*q, rounded once, in that order. */
KILN_UK_INLINE void kiln_uk_decode_kquant(uint32_t format, const uint8_t *row, int32_t i0,
                                          float *dst) {
  const uint8_t *b = row + (int64_t)(i0 / QK_K) * kiln_uk_kquant_block_bytes(format);
  const int32_t j = (i0 % QK_K) / 32; /* the group within its super-block */
  if (format == KILN_GGML_TYPE_Q6_K) {
    /* ql[128] qh[64] scales[16] d: half h = j/4 holds groups 4h..4h+3, group k = j%4 takes
     * the low (k < 2) or high nibbles of ql[64h + 32(k&1) + l] and bits 2k of qh[32h + l] */
    const int32_t h = j / 4, k = j % 4;
    const uint8_t *ql = b + 64 * h + 32 * (k & 1), *qh = b + 128 + 32 * h;
    const int8_t *sc = (const int8_t *)(b + 192) + 8 * h + 2 * k;
    const float d = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b + 208));
    for (int32_t l = 0; l < 32; ++l) {
      const int32_t lo = k < 2 ? (ql[l] & 15) : (ql[l] >> 4);
      const int32_t q = (lo | ((qh[l] >> (2 * k)) & 3) << 4) - 32;
      dst[l] = d * (float)sc[l / 16] * (float)q;
    }
    return;
  }
  /* q4_K / q5_K: d dmin scales[12] [qh[32]] qs[128]; group j takes the low (even j) or high
   * nibbles of qs[32(j/2) + l], and q5_K bit j of qh[l] as its fifth bit */
  int32_t sc, m;
  kiln_uk_kquant_scale_min(b + 4, j, &sc, &m);
  const float d1 = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b)) * (float)sc;
  const float m1 = kiln_uk_fp16_to_fp32(kiln_uk_load_u16(b + 2)) * (float)m;
  const int32_t q5 = format == KILN_GGML_TYPE_Q5_K;
  const uint8_t *qh = b + 16, *qs = b + 16 + (q5 ? 32 : 0) + 32 * (j / 2);
  for (int32_t l = 0; l < 32; ++l) {
    const int32_t q = ((j & 1) ? qs[l] >> 4 : qs[l] & 15) + (q5 ? ((qh[l] >> j) & 1) << 4 : 0);
    dst[l] = d1 * (float)q - m1;
  }
}

/* e^x in float without libm: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2),
 * e^r by Cephes' degree-7 minimax polynomial, 2^n applied as two exact power-of-two
 * factors so that subnormal results round once. Max error about 1 ulp with FMA, 2 without
 * (measured over every float in [-104, 89] by UkernelDiffTest.Expf). x > 88.7228 gives
 * +inf, x < -103.98 gives +0, NaN gives NaN; no branches, so loops over it vectorise. */
KILN_UK_INLINE float kiln_uk_expf(float x) {
  float xc = x < -104.0f ? -104.0f : x; /* NaN compares false and stays NaN */
  xc = xc > 89.0f ? 89.0f : xc;
  /* n = round-to-nearest-even(x / ln2), read off the bits of t + 1.5*2^23 (no float->int
   * conversion, which would be undefined for NaN). */
  const float magic = 12582912.0f;
  const float tm = xc * 1.44269504088896341f + magic;
  const float n = tm - magic;
  const int32_t ni = (int32_t)(kiln_uk_f32_bits(tm) - kiln_uk_f32_bits(magic));
  float r = xc - n * 0.693359375f; /* exact: n * C1 has at most 18 significant bits */
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  /* n in [-150, 129]: split it so both factors are normal powers of two */
  const int32_t n1 = ni / 2, n2 = ni - n1;
  const float s1 = kiln_uk_f32_from_bits((uint32_t)(n1 + 127) << 23);
  const float s2 = kiln_uk_f32_from_bits((uint32_t)(n2 + 127) << 23);
  const float y = (p * s1) * s2;
  return x < -103.98f ? 0.0f : y;
}

/* Runs fn over n_tasks tasks through the context's pool, or inline when there is no pool
 * worth using (one task, or a context without parallel_for). */
KILN_UK_INLINE void kiln_uk_parallel(const kiln_exec_ctx_t *ctx, kiln_task_fn_t fn, void *arg,
                                     int32_t n_tasks) {
  if (n_tasks <= 1 || !ctx || !ctx->parallel_for) {
    for (int32_t t = 0; t < n_tasks; ++t)
      fn(arg, t, n_tasks);
    return;
  }
  ctx->parallel_for(ctx->pool, fn, arg, n_tasks);
}

/* Number of tasks for `work` multiply-adds over `units` independent units (rows, heads):
 * 1 below `min_work` (a thread hand-off costs more than it saves on tiny models), else
 * `per_thread` per thread, never more than units. */
KILN_UK_INLINE int32_t kiln_uk_task_count(const kiln_exec_ctx_t *ctx, int64_t work,
                                          int64_t min_work, int64_t units, int32_t per_thread) {
  if (!ctx || !ctx->parallel_for || ctx->n_threads <= 1 || work < min_work || units <= 1)
    return 1;
  const int64_t t = (int64_t)ctx->n_threads * per_thread;
  return (int32_t)(t < units ? t : units);
}

/* [begin, end) of `units` for `task` of n_tasks, as even as integers allow. One task (every
 * call on a single thread, Hexagon's always) divides nothing: Hexagon has no divider, and
 * its 64-bit division helper took ~220 packets a call (docs/perf.md, "Hexagon scalar
 * work"). */
KILN_UK_INLINE void kiln_uk_task_range(int64_t units, int32_t task, int32_t n_tasks,
                                       int64_t *begin, int64_t *end) {
  if (n_tasks == 1) {
    *begin = 0;
    *end = units;
    return;
  }
  *begin = units * task / n_tasks;
  *end = units * (task + 1) / n_tasks;
}

/* kiln_uk_task_range for tasks that a pool splits into contiguous shares of per_thread
 * tasks per thread (runtime-min/src/exec/pool.h), each thread running its own from the
 * front while the others take from the back: within a share the tasks shrink (task j of P
 * ends at 1 - ((P - j - 1) / P)^2 of the share), so the last tasks, run at the end by
 * whoever is free, are small and the threads finish closer together. Any other task count
 * splits evenly. */
KILN_UK_INLINE void kiln_uk_task_range_tapered(int64_t units, int32_t task, int32_t n_tasks,
                                               int32_t per_thread, int64_t *begin,
                                               int64_t *end) {
  if (per_thread < 2 || n_tasks % per_thread != 0) {
    kiln_uk_task_range(units, task, n_tasks, begin, end);
    return;
  }
  const int64_t shares = n_tasks / per_thread, s = task / per_thread, j = task % per_thread;
  const int64_t s0 = units * s / shares, len = units * (s + 1) / shares - s0;
  const int64_t p = per_thread, pp = p * p;
  *begin = s0 + len * (j * (2 * p - j)) / pp;
  *end = s0 + len * ((j + 1) * (2 * p - j - 1)) / pp;
}

/* Linear is parallel from this many multiply-adds (out_features * in * n) on. */
#define KILN_UK_LINEAR_PARALLEL_MIN_WORK ((int64_t)1 << 16)
/* Tasks per thread of a linear. Each thread runs its own contiguous share and then takes
 * the others' last tasks (runtime-min/src/exec/pool.h), so when a thread runs slow for a
 * while (a busy sibling, the hypervisor, the serial work before the call) the others finish
 * its share instead of waiting for it; at most 1/16 of a product is left to one thread of
 * two at the end. Attention keeps one per thread: 8 per thread measured slower there
 * (docs/perf.md, "Linears in 8 tasks per thread, attention in one"). */
#define KILN_UK_LINEAR_TASKS_PER_THREAD 8
/* Attention is parallel (over heads) from this many multiply-adds on. */
#define KILN_UK_ATTENTION_PARALLEL_MIN_WORK ((int64_t)1 << 15)

/* Where linear writes z[t, r] (kiln_uk_linear_fused in ukernel_abi.h): row r falls in
 * output segment s (y[s], width[s] columns), plus the residual, or the SwiGLU pair.
 * The kernels specialise on the store mode (a constant after inlining), so a plain linear
 * pays no branch per output. A residual comes with one segment only. */
enum { KILN_UK_STORE_PLAIN, KILN_UK_STORE_SEGMENTS, KILN_UK_STORE_RESIDUAL, KILN_UK_STORE_SWIGLU };
#define KILN_UK_STORE_MODE(e)                                                                  \
  ((e)->swiglu     ? KILN_UK_STORE_SWIGLU                                                      \
   : (e)->residual ? KILN_UK_STORE_RESIDUAL                                                    \
   : (e)->width[1] ? KILN_UK_STORE_SEGMENTS                                                    \
                   : KILN_UK_STORE_PLAIN)
typedef struct kiln_uk_epilogue_s {
  float *y[3];
  int32_t width[3]; /* unused segments are 0 wide */
  const float *residual;
  int32_t swiglu;
} kiln_uk_epilogue_t;

/* The arguments of kiln_uk_linear_fused as its tasks see them (linear_entry.h). */
typedef struct linear_args_s {
  uint32_t format;
  const float *x;
  int32_t n, in;
  const uint8_t *w;
  int64_t row_stride;
  int32_t out_features;
  kiln_uk_epilogue_t ep;
} linear_args_t;

/* Stores z[t, r]. SwiGLU: the gate row 2j parks its value in y[t, j], and the up row
 * 2j + 1 - always computed after it by the same task (tasks split on row pairs, rows in
 * increasing order) - turns it into silu(gate) * up, as kiln_uk_silu then kiln_uk_mul. */
KILN_UK_INLINE void kiln_uk_linear_store(const kiln_uk_epilogue_t *e, int32_t mode, int64_t t,
                                         int64_t r, float v) {
  if (mode == KILN_UK_STORE_PLAIN || mode == KILN_UK_STORE_RESIDUAL) {
    const int64_t i = t * e->width[0] + r;
    e->y[0][i] = mode == KILN_UK_STORE_RESIDUAL ? v + e->residual[i] : v;
    return;
  }
  if (mode == KILN_UK_STORE_SWIGLU) {
    float *p = e->y[0] + t * e->width[0] + (r >> 1);
    if ((r & 1) == 0) {
      *p = v;
    } else {
      const float g = *p;
      *p = (g / (1.0f + kiln_uk_expf(-g))) * v;
    }
    return;
  }
  int32_t s = 0;
  if (r >= e->width[0]) {
    r -= e->width[0];
    s = 1;
    if (r >= e->width[1]) {
      r -= e->width[1];
      s = 2;
    }
  }
  e->y[s][t * e->width[s] + r] = v;
}

#ifdef __cplusplus
}
#endif

#endif /* KILN_CODEGEN_CPU_UKERNELS_COMMON_H_ */
