// One element of ggml's K-quant super-blocks (256 values), decoded as
// runtime-min/src/quant/dequant_kquants.c decodes it, bit for bit: the sub-block scale is
// formed first (d * sc), then multiplies the quant. Included after the weights buffer `w`
// and FORMAT; every read is a byte of `w`.
#ifndef KILN_VK_KQUANT_GLSL
#define KILN_VK_KQUANT_GLSL

#define KILN_Q4_K 12u
#define KILN_Q5_K 13u
#define KILN_Q6_K 14u

bool is_kquant() { return FORMAT == KILN_Q4_K || FORMAT == KILN_Q5_K || FORMAT == KILN_Q6_K; }
uint kquant_bytes() { return FORMAT == KILN_Q4_K ? 144u : FORMAT == KILN_Q5_K ? 176u : 210u; }

uint kq_byte(uint off) { return (w[off >> 2] >> (8u * (off & 3u))) & 0xffu; }

// q4_K/q5_K: sub-block j's 6-bit scale and min from the 12 bytes at `at`.
uvec2 kq_scale_min(uint at, uint j) {
  if (j < 4u)
    return uvec2(kq_byte(at + j) & 63u, kq_byte(at + j + 4u) & 63u);
  return uvec2((kq_byte(at + j + 4u) & 15u) | ((kq_byte(at + j - 4u) >> 6) << 4),
               (kq_byte(at + j + 4u) >> 4) | ((kq_byte(at + j) >> 6) << 4));
}

// Element e (0..255) of the super-block at byte `off`.
float kq_element(uint off, uint e) {
  if (FORMAT == KILN_Q6_K) {  // ql[128], qh[64], int8 scales[16], d
    const uint h = e / 128u, g = (e % 128u) / 32u, l = e % 32u;
    const uint ql = kq_byte(off + 64u * h + l + 32u * (g & 1u));
    const uint qh = (kq_byte(off + 128u + 32u * h + l) >> (2u * g)) & 3u;
    const int q = int(((g < 2u) ? (ql & 15u) : (ql >> 4)) | (qh << 4)) - 32;
    const int sc = bitfieldExtract(int(kq_byte(off + 192u + 8u * h + l / 16u + 2u * g)), 0, 8);
    precise float v = KILN_LOAD_F16(w, off + 208u) * float(sc);
    v = v * float(q);
    return v;
  }
  // q4_K: d, dmin, scales[12], qs[128]; q5_K: the same with qh[32] before qs
  const uint chunk = e / 64u, high = (e % 64u) / 32u, l = e % 32u;
  const uvec2 sm = kq_scale_min(off + 4u, 2u * chunk + high);
  const uint qs = off + (FORMAT == KILN_Q5_K ? 48u : 16u);
  const uint byte = kq_byte(qs + 32u * chunk + l);
  uint q = high != 0u ? (byte >> 4) : (byte & 15u);
  if (FORMAT == KILN_Q5_K)
    q += ((kq_byte(off + 16u + l) >> (2u * chunk + high)) & 1u) << 4;
  precise float d1 = KILN_LOAD_F16(w, off) * float(sm.x);
  precise float m1 = KILN_LOAD_F16(w, off + 2u) * float(sm.y);
  precise float v = d1 * float(q) - m1;
  return v;
}

#endif
