// y[t, o] = sum_i x[t, i] * W[o, i] (+ residual[t, o]): kiln_uk_linear's math, W in ggml's
// block rows of FORMAT (f32, f16, q8_0, q4_0, q4_1, q4_K, q5_K, q6_K), fp32 accumulation.
//
// One workgroup takes ROWS consecutive rows for TOKENS consecutive tokens (gl_WorkGroupID.y
// counts token blocks). Its threads split each row's blocks, and each block read is used
// for all the tokens; partial sums meet by subgroupAdd and then across subgroups in shared
// memory - llama.cpp's matrix-vector shape for decode (TOKENS 1 reads each weight once a
// token), and TOKENS times fewer weight reads and workgroups for prefill.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0u;
layout(constant_id = 2) const uint ROWS = 2u;
layout(constant_id = 3) const uint TOKENS = 1u;

#include "linear_common.glsl"

shared float partial[ROWS * TOKENS * 64];  // per row, token and subgroup (up to 64)

void main() {
  const uint per_block = elems_per_block();
  // Full blocks only: the compiler pads rows to whole blocks with zero elements, and the
  // partial last block of a q row is read with x masked (below).
  const uint blocks = (p.in_features + per_block - 1u) / per_block;
  const uint t0 = gl_WorkGroupID.y * TOKENS;
  const uint tokens = min(TOKENS, p.n - t0);
  const uint row0 = gl_WorkGroupID.x * ROWS;
  const bool tail = blocks * per_block != p.in_features;

  float acc[ROWS * TOKENS];
  for (uint k = 0u; k < ROWS * TOKENS; ++k)
    acc[k] = 0.0;
  for (uint b = gl_LocalInvocationID.x; b < blocks; b += gl_WorkGroupSize.x) {
    if (tail && b == blocks - 1u)
      continue;  // the partial block is summed element by element below
    for (uint r = 0u; r < ROWS; ++r) {
      const uint row = row0 + r;
      if (row >= p.out_features)
        continue;
      for (uint t = 0u; t < tokens; ++t)
        acc[r * TOKENS + t] += block_dot(p.w_offset + row * p.row_stride, b,
                                         p.x_offset + (t0 + t) * p.in_features);
    }
  }
  if (tail && gl_LocalInvocationID.x == 0u) {
    const uint b = blocks - 1u;
    for (uint r = 0u; r < ROWS; ++r) {
      const uint row = row0 + r;
      if (row >= p.out_features)
        continue;
      for (uint t = 0u; t < tokens; ++t)
        acc[r * TOKENS + t] += tail_dot(p.w_offset + row * p.row_stride, b,
                                        p.x_offset + (t0 + t) * p.in_features);
    }
  }

  for (uint k = 0u; k < ROWS * TOKENS; ++k) {
    const float s = subgroupAdd(acc[k]);
    if (subgroupElect())
      partial[k * 64u + gl_SubgroupID] = s;
  }
  barrier();
  for (uint k = gl_LocalInvocationID.x; k < ROWS * TOKENS; k += gl_WorkGroupSize.x) {
    const uint row = row0 + k / TOKENS, t = k % TOKENS;
    if (row < p.out_features && t < tokens) {
      float s = 0.0;
      for (uint g = 0u; g < gl_NumSubgroups; ++g)
        s += partial[k * 64u + g];
      const uint at = (t0 + t) * p.y_stride + row;
      if (p.has_residual != 0u)
        s += res[p.res_offset + at];
      y[p.y_offset + at] = s;
    }
  }
}
