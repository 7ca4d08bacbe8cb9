/* Runs one linear micro-kernel `calls` times on random weights, for counting executed
 * Hexagon packets under qemu-hexagon-static (count_packets.sh runs it with two call counts
 * and divides the difference, so setup cost cancels).
 *   packets <q8_0|q4_0|q{8_0,4_0,4_1}_r16|q{8_0,4_0,4_1}_r32|q{4,5,6}_K_r16> <generic|hvx>
 *           <out> <in> <n_tokens> <calls>
 *           [shard_groups]
 * ggml formats call kiln_uk_linear, the r16/r32 ones kiln_uk_linear_packed (with
 * shard_groups, default 0: the l2fetch per weight shard the compiler asks for). The generic
 * kernels are linked renamed (gen_kiln_uk_linear, gen_kiln_uk_linear_packed). */
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

static int parse_int(const char *s, int32_t *out) {
  int64_t v = 0;
  if (!*s)
    return 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9' || v > 100000000)
      return 0;
    v = v * 10 + (*s - '0');
  }
  *out = (int32_t)v;
  return 1;
}

int kiln_fs_main(int argc, char **argv) {
  int32_t out, in, n, calls, shard = 0;
  if ((argc != 7 && argc != 8) || !parse_int(argv[3], &out) || !parse_int(argv[4], &in) ||
      !parse_int(argv[5], &n) || !parse_int(argv[6], &calls) || out < 1 || in < 1 || n < 1 ||
      (argc == 8 && !parse_int(argv[7], &shard))) {
    kiln_fs_puts(2, "usage: packets <q8_0|q4_0|q{8_0,4_0,4_1}_r16|q{8_0,4_0,4_1}_r32|"
                    "q{4,5,6}_K_r16> <generic|hvx> <out> <in> "
                    "<n_tokens> <calls> [shard_groups]\n");
    return 2;
  }
  /* ggml rows (bb: block bytes) or the packed groups (bb = 0) */
  static const struct {
    const char *name;
    uint32_t f;
    int32_t bb;
  } formats[] = {{"q8_0", KILN_GGML_TYPE_Q8_0, 34},  {"q4_0", KILN_GGML_TYPE_Q4_0, 18},
                 {"q8_0_r16", KILN_TYPE_Q8_0_R16, 0}, {"q4_0_r16", KILN_TYPE_Q4_0_R16, 0},
                 {"q4_1_r16", KILN_TYPE_Q4_1_R16, 0}, {"q8_0_r32", KILN_TYPE_Q8_0_R32, 0},
                 {"q4_0_r32", KILN_TYPE_Q4_0_R32, 0}, {"q4_1_r32", KILN_TYPE_Q4_1_R32, 0},
                 {"q4_K_r16", KILN_TYPE_Q4_K_R16, 0}, {"q5_K_r16", KILN_TYPE_Q5_K_R16, 0},
                 {"q6_K_r16", KILN_TYPE_Q6_K_R16, 0}};
  uint32_t f = 0;
  int32_t bb = -1;
  for (uint32_t i = 0; i < sizeof formats / sizeof formats[0]; ++i)
    if (!strcmp(argv[1], formats[i].name))
      f = formats[i].f, bb = formats[i].bb;
  if (bb < 0) {
    kiln_fs_printf("packets: unknown format '%s' (q8_0, q4_0, q8_0_r16, q4_0_r16, q4_1_r16, "
                   "q8_0_r32, q4_0_r32, q4_1_r32, q4_K_r16, q5_K_r16, q6_K_r16)\n",
                   argv[1]);
    return 2;
  }
  const int hvx = !strcmp(argv[2], "hvx");
  if (!hvx && strcmp(argv[2], "generic")) {
    kiln_fs_printf("packets: unknown kernel '%s' (generic or hvx)\n", argv[2]);
    return 2;
  }
  const int packed = bb == 0;
  /* ggml: row stride; packed: group stride (and rs * units below is the whole matrix) */
  const int64_t rs = packed ? (int64_t)kiln_packed_group_bytes(f, (uint64_t)in)
                            : (int64_t)bb * ((in + 31) / 32);
  const int32_t R = packed ? (int32_t)kiln_packed_rows(f) : 1;
  const int32_t units = (out + R - 1) / R; /* rows or groups of rs bytes */
  uint8_t *w = kiln_fs_aligned_alloc(128, (size_t)(rs * units + 4));
  uint8_t *qs =
      kiln_fs_aligned_alloc(64, (size_t)n * kiln_packed_act_stride((uint64_t)in));
  float *x = kiln_fs_malloc(sizeof(float) * (size_t)n * in);
  float *y = kiln_fs_malloc(sizeof(float) * (size_t)n * out);
  if (!w || !x || !y || !qs) {
    kiln_fs_puts(2, "packets: out of memory\n");
    return 1;
  }
  /* cheap fill (setup runs under the same packet count): xorshift words, then fp16
   * scales 0x2000-0x23ff (about 0.008-0.016) in every block (K-quants keep random scales:
   * the kernels take the same steps whatever the values) */
  uint32_t s = 12345;
  for (int64_t i = 0; i + 4 <= rs * units; i += 4) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    *(uint32_t *)(w + i) = s;
  }
  const int32_t nb = (in + 31) / 32;
  for (int64_t u = 0; u < (kiln_is_packed_kquant(f) ? 0 : units); ++u)
    for (int32_t b = 0; b < (packed ? nb : (int32_t)(rs / bb)); ++b)
      for (int32_t r = 0; r < R; ++r) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        const int64_t at = packed ? u * rs + (int64_t)kiln_packed_scales_offset(f, (uint64_t)b) + 2 * r
                                  : u * rs + b * bb;
        *(uint16_t *)(w + at) = (uint16_t)(0x2000 | (s & 0x3ff));
      }
  for (int64_t i = 0; i < (int64_t)n * in; ++i) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x[i] = (float)(int32_t)s * 0x1p-31f;
  }
  float check = 0.0f;
  for (int32_t c = 0; c < calls; ++c) {
    if (packed && hvx)
      kiln_uk_linear_packed(0, f, x, n, in, w, rs, out, y, qs, shard);
    else if (packed)
      gen_kiln_uk_linear_packed(0, f, x, n, in, w, rs, out, y, qs, shard);
    else if (hvx)
      kiln_uk_linear(0, f, x, n, in, w, rs, out, y);
    else
      gen_kiln_uk_linear(0, f, x, n, in, w, rs, out, y);
    check += y[c % (n * out)];
  }
  kiln_fs_printf("%s %s out=%d in=%d n=%d calls=%d checksum %.4f\n", argv[1], argv[2], out, in, n,
                 calls, check);
  return 0;
}
