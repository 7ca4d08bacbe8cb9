// y[t, o] = sum_i x[t, i] * W[o, i] (+ residual[t, o]): kiln_uk_linear's math, W in ggml's
// block rows of FORMAT (f32, f16, q8_0, q4_0), fp32 accumulation.
//
// One workgroup takes ROWS consecutive rows for one token (gl_WorkGroupID.y). Its threads
// split each row's blocks; partial sums meet by subgroupAdd and then across subgroups in
// shared memory - llama.cpp's matrix-vector shape, which reads each weight once a token.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0u;
layout(constant_id = 2) const uint ROWS = 2u;

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
} p;

shared float partial[ROWS * 64];  // one slot per subgroup and row (up to 64 subgroups)

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

void main() {
  const uint per_block = (FORMAT == KILN_F32 || FORMAT == KILN_F16) ? 1u : 32u;
  // Full blocks only: the compiler pads rows to whole blocks with zero elements, and the
  // partial last block of a q row is read with x masked (below).
  const uint blocks = (p.in_features + per_block - 1u) / per_block;
  const uint t = gl_WorkGroupID.y;
  const uint row0 = gl_WorkGroupID.x * ROWS;
  const uint xb = p.x_offset + t * p.in_features;
  const bool tail = blocks * per_block != p.in_features;

  float acc[ROWS];
  for (uint r = 0u; r < ROWS; ++r)
    acc[r] = 0.0;
  for (uint b = gl_LocalInvocationID.x; b < blocks; b += gl_WorkGroupSize.x) {
    if (tail && b == blocks - 1u)
      continue;  // the partial block is summed element by element below
    for (uint r = 0u; r < ROWS; ++r) {
      const uint row = row0 + r;
      if (row < p.out_features)
        acc[r] += block_dot(p.w_offset + row * p.row_stride, b, xb);
    }
  }
  if (tail && gl_LocalInvocationID.x == 0u) {
    const uint b = blocks - 1u;
    for (uint r = 0u; r < ROWS; ++r) {
      const uint row = row0 + r;
      if (row >= p.out_features)
        continue;
      const uint off = p.w_offset + row * p.row_stride + (FORMAT == KILN_Q8_0 ? 34u : 18u) * b;
      const float d = KILN_LOAD_F16(w, off);
      for (uint j = 32u * b; j < p.in_features; ++j) {
        const uint e = j - 32u * b;
        float q;
        if (FORMAT == KILN_Q8_0) {
          const uint word = KILN_LOAD_U32(w, off + 2u + (e & ~3u));
          q = float(KILN_S8(word, e & 3u));
        } else {
          const uint word = KILN_LOAD_U32(w, off + 2u + ((e & 15u) & ~3u));
          const uint byte = (word >> (8u * (e & 3u))) & 0xffu;
          q = float(int(e < 16u ? (byte & 15u) : (byte >> 4)) - 8);
        }
        acc[r] += q * d * x[xb + j];
      }
    }
  }

  for (uint r = 0u; r < ROWS; ++r) {
    const float s = subgroupAdd(acc[r]);
    if (subgroupElect())
      partial[r * 64u + gl_SubgroupID] = s;
  }
  barrier();
  if (gl_LocalInvocationID.x < ROWS) {
    const uint r = gl_LocalInvocationID.x;
    const uint row = row0 + r;
    if (row < p.out_features) {
      float s = 0.0;
      for (uint g = 0u; g < gl_NumSubgroups; ++g)
        s += partial[r * 64u + g];
      const uint o = p.y_offset + t * p.out_features + row;
      if (p.has_residual != 0u)
        s += res[p.res_offset + t * p.out_features + row];
      y[o] = s;
    }
  }
}
