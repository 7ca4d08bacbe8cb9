// y[t, o] = sum_i x[t, i] * W[o, i] (+ residual[t, o]) for a batch of tokens (prefill):
// linear.comp's math and operands, laid out for many outputs instead of long rows. Each
// thread takes one row for TOKENS tokens, so every weight block is read from memory once for
// all of them (a K-quant sub-block is also decoded once; the 32-element formats decode
// again per token, from cache) and no partial sums cross threads; a workgroup covers
// local_size_x rows.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0u;
layout(constant_id = 3) const uint TOKENS = 8u;

#include "linear_common.glsl"

void main() {
  const uint per_block = elems_per_block();
  const uint blocks = (p.in_features + per_block - 1u) / per_block;
  const bool tail = blocks * per_block != p.in_features;
  const uint row = gl_GlobalInvocationID.x;
  const uint t0 = gl_WorkGroupID.y * TOKENS;
  if (row >= p.out_features || t0 >= p.n)
    return;
  const uint tokens = min(TOKENS, p.n - t0);
  const uint row_off = p.w_offset + row * p.row_stride;
  float acc[TOKENS];
  for (uint t = 0u; t < TOKENS; ++t)
    acc[t] = 0.0;
  const uint full = tail ? blocks - 1u : blocks;
  for (uint b = 0u; b < full; ++b) {
    if (is_kquant()) {  // a sub-block's codes and scales read once for the tokens
      const KSub s = kq_subblock(row_off + kquant_bytes() * (b / 8u), b % 8u);
      for (uint t = 0u; t < tokens; ++t)
        acc[t] += kq_dot(s, p.x_offset + (t0 + t) * p.in_features + 32u * b);
      continue;
    }
    for (uint t = 0u; t < tokens; ++t)
      acc[t] += block_dot(row_off, b, p.x_offset + (t0 + t) * p.in_features);
  }
  if (tail)
    for (uint t = 0u; t < tokens; ++t)
      acc[t] += tail_dot(row_off, blocks - 1u, p.x_offset + (t0 + t) * p.in_features);
  for (uint t = 0u; t < tokens; ++t) {
    const uint at = (t0 + t) * p.y_stride + row;
    y[p.y_offset + at] = acc[t] + (p.has_residual != 0u ? res[p.res_offset + at] : 0.0);
  }
}
