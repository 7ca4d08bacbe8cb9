// out[t, i] = table[ids[t], i] decoded from FORMAT (f32, f16, q8_0, q4_0, q4_1, q4_K, q5_K,
// q6_K): kiln_uk_embed's math, one row read a
// token. One thread per element; ids are checked by the caller (kiln_uk_check_inputs).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0u;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

#include "kquant.glsl"

layout(push_constant) uniform Params {
  uint dim;
  uint n;
  uint row_stride;  // bytes
  uint w_offset;    // bytes
  uint ids_offset;  // ints
  uint out_offset;  // floats
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint t = gl_GlobalInvocationID.y;
  if (i >= p.dim || t >= p.n)
    return;
  const uint row = p.w_offset + uint(ids[p.ids_offset + t]) * p.row_stride;
  precise float v;  // q * d + m unfused, as kiln_dequantize computes it
  if (FORMAT == KILN_F32) {
    v = uintBitsToFloat(w[(row >> 2) + i]);
  } else if (FORMAT == KILN_F16) {
    v = KILN_LOAD_F16(w, row + 2u * i);
  } else if (FORMAT == KILN_Q8_0) {
    const uint off = row + 34u * (i >> 5);
    const uint e = i & 31u;
    v = float(KILN_S8(KILN_LOAD_U32(w, off + 2u + (e & ~3u)), e & 3u)) * KILN_LOAD_F16(w, off);
  } else if (is_kquant()) {
    v = kq_element(row + kquant_bytes() * (i / 256u), i % 256u);
  } else if (FORMAT == KILN_Q4_1) {
    const uint off = row + 20u * (i >> 5);
    const uint e = i & 31u;
    const uint byte = (KILN_LOAD_U32(w, off + 4u + ((e & 15u) & ~3u)) >> (8u * (e & 3u))) & 0xffu;
    v = float(e < 16u ? (byte & 15u) : (byte >> 4)) * KILN_LOAD_F16(w, off) +
        KILN_LOAD_F16(w, off + 2u);
  } else {  // KILN_Q4_0
    const uint off = row + 18u * (i >> 5);
    const uint e = i & 31u;
    const uint byte = (KILN_LOAD_U32(w, off + 2u + ((e & 15u) & ~3u)) >> (8u * (e & 3u))) & 0xffu;
    v = float(int(e < 16u ? (byte & 15u) : (byte >> 4)) - 8) * KILN_LOAD_F16(w, off);
  }
  o[p.out_offset + t * p.dim + i] = v;
}
