/* Runs one linear micro-kernel `calls` times on random weights, for counting executed
 * Hexagon packets under qemu-hexagon-static (count_packets.sh runs it with two call counts
 * and divides the difference, so setup cost cancels).
 *   packets <q8_0|q4_0> <generic|hvx> <out> <in> <n_tokens> <calls>
 * The generic kernel is linked renamed (gen_kiln_uk_linear). */
#include "common.h"
#include "fs.h"
#include "ukernel_abi.h"

void gen_kiln_uk_linear(const kiln_exec_ctx_t *ctx, uint32_t format, const float *x, int32_t n,
                        int32_t in, const uint8_t *w, int64_t row_stride, int32_t out_features,
                        float *y);

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
  int32_t out, in, n, calls;
  if (argc != 7 || !parse_int(argv[3], &out) || !parse_int(argv[4], &in) ||
      !parse_int(argv[5], &n) || !parse_int(argv[6], &calls) || out < 1 || in < 1 || n < 1) {
    kiln_fs_puts(2, "usage: packets <q8_0|q4_0> <generic|hvx> <out> <in> <n_tokens> <calls>\n");
    return 2;
  }
  uint32_t f;
  int32_t bb;
  if (!strcmp(argv[1], "q8_0")) {
    f = KILN_GGML_TYPE_Q8_0, bb = 34;
  } else if (!strcmp(argv[1], "q4_0")) {
    f = KILN_GGML_TYPE_Q4_0, bb = 18;
  } else {
    kiln_fs_printf("packets: unknown format '%s' (q8_0 or q4_0)\n", argv[1]);
    return 2;
  }
  const int hvx = !strcmp(argv[2], "hvx");
  if (!hvx && strcmp(argv[2], "generic")) {
    kiln_fs_printf("packets: unknown kernel '%s' (generic or hvx)\n", argv[2]);
    return 2;
  }
  const int64_t rs = (int64_t)bb * ((in + 31) / 32);
  uint8_t *w = kiln_fs_aligned_alloc(128, (size_t)(rs * out + 4));
  float *x = kiln_fs_malloc(sizeof(float) * (size_t)n * in);
  float *y = kiln_fs_malloc(sizeof(float) * (size_t)n * out);
  if (!w || !x || !y) {
    kiln_fs_puts(2, "packets: out of memory\n");
    return 1;
  }
  /* cheap fill (setup runs under the same packet count): xorshift words, then fp16
   * scales 0x2000-0x23ff (about 0.008-0.016) in every block */
  uint32_t s = 12345;
  for (int64_t i = 0; i + 4 <= rs * out; i += 4) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    *(uint32_t *)(w + i) = s;
  }
  for (int64_t b = 0; b < rs * out / bb; ++b) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    *(uint16_t *)(w + b * bb) = (uint16_t)(0x2000 | (s & 0x3ff));
  }
  for (int64_t i = 0; i < (int64_t)n * in; ++i) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x[i] = (float)(int32_t)s * 0x1p-31f;
  }
  float check = 0.0f;
  for (int32_t c = 0; c < calls; ++c) {
    if (hvx)
      kiln_uk_linear(0, f, x, n, in, w, rs, out, y);
    else
      gen_kiln_uk_linear(0, f, x, n, in, w, rs, out, y);
    check += y[c % (n * out)];
  }
  kiln_fs_printf("%s %s out=%d in=%d n=%d calls=%d checksum %.4f\n", argv[1], argv[2], out, in, n,
                 calls, check);
  return 0;
}
