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

// Sub-block j (0..7, 32 elements) of the super-block at byte `off`, its scales formed once:
// element 4k + i is scale[k / 4] * codes[k][i] - min, which is kq_element's value (the
// same products, unfused). q4_K/q5_K: both scales d * sc, min dmin * m; q6_K: d * sc of
// each half (16 elements), min 0, the codes already less 32.
struct KSub {
  vec4 codes[8];
  vec2 scale;
  float min;
};

KSub kq_subblock(uint off, uint j) {
  KSub s;
  if (FORMAT == KILN_Q6_K) {
    const uint h = j / 4u, g = j % 4u;
    const uint ql = off + 64u * h + 32u * (g & 1u), qh = off + 128u + 32u * h;
    const uint lo = 4u * (g >> 1), hi = 2u * g;
    for (uint k = 0u; k < 8u; ++k) {
      const uvec4 shifts = uvec4(0u, 8u, 16u, 24u);
      const uvec4 q = ((uvec4(KILN_LOAD_U32(w, ql + 4u * k)) >> (shifts + lo)) & 15u) |
                      (((uvec4(KILN_LOAD_U32(w, qh + 4u * k)) >> (shifts + hi)) & 3u) << 4);
      s.codes[k] = vec4(ivec4(q) - 32);
    }
    const float d = KILN_LOAD_F16(w, off + 208u);
    const uint sc = off + 192u + 8u * h + 2u * g;
    precise float s0 = d * float(bitfieldExtract(int(kq_byte(sc)), 0, 8));
    precise float s1 = d * float(bitfieldExtract(int(kq_byte(sc + 1u)), 0, 8));
    s.scale = vec2(s0, s1);
    s.min = 0.0;
    return s;
  }
  const uvec2 sm = kq_scale_min(off + 4u, j);
  const uint qs = off + (FORMAT == KILN_Q5_K ? 48u : 16u) + 32u * (j / 2u);
  const uint lo = 4u * (j & 1u);
  for (uint k = 0u; k < 8u; ++k) {
    const uvec4 shifts = uvec4(0u, 8u, 16u, 24u);
    uvec4 q = (uvec4(KILN_LOAD_U32(w, qs + 4u * k)) >> (shifts + lo)) & 15u;
    if (FORMAT == KILN_Q5_K)
      q |= ((uvec4(KILN_LOAD_U32(w, off + 16u + 4u * k)) >> (shifts + j)) & 1u) << 4;
    s.codes[k] = vec4(q);
  }
  precise float d1 = KILN_LOAD_F16(w, off) * float(sm.x);
  precise float m1 = KILN_LOAD_F16(w, off + 2u) * float(sm.y);
  s.scale = vec2(d1);
  s.min = m1;
  return s;
}

// Element 4k + i of a sub-block, kq_element's value.
vec4 kq_values(KSub s, uint k) {
  precise vec4 v = s.scale[k / 4u] * s.codes[k] - s.min;
  return v;
}

#endif
