// The operands of linear.comp and matmul.comp and one block's dot product: W in ggml's
// block rows of FORMAT (f32, f16, q8_0, q4_0, q4_1, q4_K, q5_K, q6_K), fp32 accumulation.
// Included after FORMAT.
#ifndef KILN_VK_LINEAR_COMMON_GLSL
#define KILN_VK_LINEAR_COMMON_GLSL

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer Residual { float res[]; };

#include "kquant.glsl"

layout(push_constant) uniform Params {
  uint in_features;  // logical row length
  uint out_features;
  uint row_stride;   // bytes
  uint w_offset;     // bytes, 2-aligned (4 for f32)
  uint x_offset;     // floats
  uint y_offset;
  uint res_offset;   // floats; used when has_residual
  uint has_residual;
  uint n;            // tokens in the batch
  uint y_stride;     // floats from one token's y (and residual) row to the next: out_features,
                     // or more where a linear's rows are split over dispatches
} p;

// Elements of one block of FORMAT: 1 for f32/f16 (an element at a time), else 32 - for the
// K-quants a sub-block of their 256-element super-blocks (whole ones only: the compiler
// keeps a K-quant where its rows are whole super-blocks), so that a row's work splits over
// 8 times as many threads and each sub-block's scales are formed once.
uint elems_per_block() { return (FORMAT == KILN_F32 || FORMAT == KILN_F16) ? 1u : 32u; }

vec4 x4(uint at) { return vec4(x[at], x[at + 1u], x[at + 2u], x[at + 3u]); }

// A K-quant sub-block dotted with x[xb .. xb + 32): the codes meet x four at a time and
// each scale multiplies its half's sum once, the min the sum of x.
float kq_dot(KSub s, uint xb) {
  float half_sums[2] = float[2](0.0, 0.0);
  float sx = 0.0;
  for (uint k = 0u; k < 8u; ++k) {
    const vec4 xv = x4(xb + 4u * k);
    half_sums[k / 4u] += dot(s.codes[k], xv);
    sx += xv.x + xv.y + xv.z + xv.w;
  }
  return s.scale.x * half_sums[0] + s.scale.y * half_sums[1] - s.min * sx;
}

float block_dot(uint row_off, uint b, uint xb) {
  float s = 0.0;
  if (is_kquant())  // b counts 32-element sub-blocks
    return kq_dot(kq_subblock(row_off + kquant_bytes() * (b / 8u), b % 8u), xb + 32u * b);
  if (FORMAT == KILN_F32) {
    s = uintBitsToFloat(w[(row_off >> 2) + b]) * x[xb + b];
  } else if (FORMAT == KILN_F16) {
    s = KILN_LOAD_F16(w, row_off + 2u * b) * x[xb + b];
  } else if (FORMAT == KILN_Q8_0) {
    const uint off = row_off + 34u * b;
    const uint base = xb + 32u * b;
    for (uint k = 0u; k < 8u; ++k) {
      const uint word = KILN_LOAD_U32(w, off + 2u + 4u * k);
      for (uint j = 0u; j < 4u; ++j)
        s += float(KILN_S8(word, j)) * x[base + 4u * k + j];
    }
    s *= KILN_LOAD_F16(w, off);
  } else if (FORMAT == KILN_Q4_0) {
    const uint off = row_off + 18u * b;
    const uint base = xb + 32u * b;
    for (uint k = 0u; k < 4u; ++k) {
      const uint word = KILN_LOAD_U32(w, off + 2u + 4u * k);
      for (uint j = 0u; j < 4u; ++j) {
        const uint byte = (word >> (8u * j)) & 0xffu;
        s += float(int(byte & 15u) - 8) * x[base + 4u * k + j] +
             float(int(byte >> 4) - 8) * x[base + 16u + 4u * k + j];
      }
    }
    s *= KILN_LOAD_F16(w, off);
  } else if (FORMAT == KILN_Q4_1) {
    // d * sum(q x) + m * sum(x): a block's values are q * d + m
    const uint off = row_off + 20u * b;
    const uint base = xb + 32u * b;
    float sx = 0.0;
    for (uint k = 0u; k < 4u; ++k) {
      const uint word = KILN_LOAD_U32(w, off + 4u + 4u * k);
      for (uint j = 0u; j < 4u; ++j) {
        const uint byte = (word >> (8u * j)) & 0xffu;
        const float lo = x[base + 4u * k + j], hi = x[base + 16u + 4u * k + j];
        s += float(byte & 15u) * lo + float(byte >> 4) * hi;
        sx += lo + hi;
      }
    }
    s = s * KILN_LOAD_F16(w, off) + sx * KILN_LOAD_F16(w, off + 2u);
  }
  return s;
}

// Bytes of one block of a 32-element FORMAT, and where its codes start.
uint block_bytes() { return FORMAT == KILN_Q8_0 ? 34u : FORMAT == KILN_Q4_1 ? 20u : 18u; }
uint codes_at() { return FORMAT == KILN_Q4_1 ? 4u : 2u; }

// Row `row_off`'s partial last block (elements 32 * b .. in_features) dotted with the
// activation at xb, element by element so that x is never read past the row.
float tail_dot(uint row_off, uint b, uint xb) {
  if (is_kquant()) {  // b counts sub-blocks
    float s = 0.0;
    for (uint j = 32u * b; j < p.in_features; ++j)
      s += kq_element(row_off + kquant_bytes() * (b / 8u), j - 256u * (b / 8u)) * x[xb + j];
    return s;
  }
  const uint off = row_off + block_bytes() * b;
  const float d = KILN_LOAD_F16(w, off);
  const float m = FORMAT == KILN_Q4_1 ? KILN_LOAD_F16(w, off + 2u) : 0.0;
  float s = 0.0;
  for (uint j = 32u * b; j < p.in_features; ++j) {
    const uint e = j - 32u * b;
    float v;
    if (FORMAT == KILN_Q8_0) {
      v = float(KILN_S8(KILN_LOAD_U32(w, off + 2u + (e & ~3u)), e & 3u)) * d;
    } else {
      const uint byte =
          (KILN_LOAD_U32(w, off + codes_at() + ((e & 15u) & ~3u)) >> (8u * (e & 3u))) & 0xffu;
      const uint nibble = e < 16u ? (byte & 15u) : (byte >> 4);
      v = FORMAT == KILN_Q4_1 ? float(nibble) * d + m : float(int(nibble) - 8) * d;
    }
    s += v * x[xb + j];
  }
  return s;
}

#endif
