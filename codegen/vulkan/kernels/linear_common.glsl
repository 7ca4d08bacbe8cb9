// The operands of linear.comp and matmul.comp and one block's dot product: W in ggml's
// block rows of FORMAT (f32, f16, q8_0, q4_0), fp32 accumulation. Included after FORMAT.
#ifndef KILN_VK_LINEAR_COMMON_GLSL
#define KILN_VK_LINEAR_COMMON_GLSL

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer Residual { float res[]; };

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
} p;

float block_dot(uint row_off, uint b, uint xb) {
  float s = 0.0;
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
  }
  return s;
}

// Row `row_off`'s partial last block (elements 32 * b .. in_features) dotted with the
// activation at xb, element by element so that x is never read past the row.
float tail_dot(uint row_off, uint b, uint xb) {
  const uint off = row_off + (FORMAT == KILN_Q8_0 ? 34u : 18u) * b;
  const float d = KILN_LOAD_F16(w, off);
  float s = 0.0;
  for (uint j = 32u * b; j < p.in_features; ++j) {
    const uint e = j - 32u * b;
    float q;
    if (FORMAT == KILN_Q8_0) {
      q = float(KILN_S8(KILN_LOAD_U32(w, off + 2u + (e & ~3u)), e & 3u));
    } else {
      const uint byte = (KILN_LOAD_U32(w, off + 2u + ((e & 15u) & ~3u)) >> (8u * (e & 3u))) & 0xffu;
      q = float(int(e < 16u ? (byte & 15u) : (byte >> 4)) - 8);
    }
    s += q * d * x[xb + j];
  }
  return s;
}

#endif
