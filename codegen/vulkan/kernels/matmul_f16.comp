// matmul.comp's variant for devices with fp16 arithmetic (shaderFloat16): the same
// bindings, push constants and results, swapped in per device (docs/vulkan.md, "Kernel
// variants"). Each weight block is decoded once for all the thread's tokens and rounded to
// fp16 (q * d needs up to 19 significant bits), then multiplied by the activations, also
// rounded to fp16, four at a time (an f16vec4 dot: twice the fp32 rate on phone GPUs). The
// four-product sums accumulate in fp32, so fp16 rounds 4 products, not a row. Activations
// past fp16's 65504 would overflow. The placement takes it on GPUs with fp16 arithmetic,
// not on CPU devices (lavapipe), where it is emulated.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0u;
layout(constant_id = 3) const uint TOKENS = 8u;

#include "linear_common.glsl"

// Element e (0..31) of the 32-element group b of the row at row_off, decoded in fp32.
float element(uint row_off, uint b, uint e) {
  if (is_kquant())
    return kq_element(row_off + kquant_bytes() * (b / 8u), 32u * (b % 8u) + e);
  if (FORMAT == KILN_F32)
    return uintBitsToFloat(w[(row_off >> 2) + 32u * b + e]);
  if (FORMAT == KILN_F16)
    return KILN_LOAD_F16(w, row_off + 2u * (32u * b + e));
  const uint off = row_off + block_bytes() * b;
  const float d = KILN_LOAD_F16(w, off);
  if (FORMAT == KILN_Q8_0)
    return float(KILN_S8(KILN_LOAD_U32(w, off + 2u + (e & ~3u)), e & 3u)) * d;
  const uint byte = (KILN_LOAD_U32(w, off + codes_at() + ((e & 15u) & ~3u)) >> (8u * (e & 3u))) & 0xffu;
  const uint nibble = e < 16u ? (byte & 15u) : (byte >> 4);
  return FORMAT == KILN_Q4_1 ? float(nibble) * d + KILN_LOAD_F16(w, off + 2u)
                             : float(int(nibble) - 8) * d;
}

void main() {
  // Blocks of 32 elements for every format here; a row's partial last block (and f32/f16
  // rows whose length is not a multiple of 32) goes element by element in fp32.
  const uint blocks = p.in_features / 32u;
  const uint row = gl_GlobalInvocationID.x;
  const uint t0 = gl_WorkGroupID.y * TOKENS;
  if (row >= p.out_features || t0 >= p.n)
    return;
  const uint tokens = min(TOKENS, p.n - t0);
  const uint row_off = p.w_offset + row * p.row_stride;
  float acc[TOKENS];
  for (uint t = 0u; t < TOKENS; ++t)
    acc[t] = 0.0;
  for (uint b = 0u; b < blocks; ++b) {
    f16vec4 wv[8];
    if (is_kquant()) {  // the sub-block's scales formed once
      const KSub s = kq_subblock(row_off + kquant_bytes() * (b / 8u), b % 8u);
      for (uint k = 0u; k < 8u; ++k)
        wv[k] = f16vec4(kq_values(s, k));
    } else {
      for (uint k = 0u; k < 8u; ++k)
        wv[k] = f16vec4(element(row_off, b, 4u * k), element(row_off, b, 4u * k + 1u),
                        element(row_off, b, 4u * k + 2u), element(row_off, b, 4u * k + 3u));
    }
    for (uint t = 0u; t < tokens; ++t) {
      const uint xb = p.x_offset + (t0 + t) * p.in_features + 32u * b;
      for (uint k = 0u; k < 8u; ++k) {
        const f16vec4 xv = f16vec4(x[xb + 4u * k], x[xb + 4u * k + 1u], x[xb + 4u * k + 2u],
                                   x[xb + 4u * k + 3u]);
        acc[t] += float(dot(wv[k], xv));
      }
    }
  }
  for (uint i = 32u * blocks; i < p.in_features; ++i)
    for (uint t = 0u; t < tokens; ++t)
      acc[t] += element(row_off, i / 32u, i % 32u) * x[p.x_offset + (t0 + t) * p.in_features + i];
  for (uint t = 0u; t < tokens; ++t) {
    const uint at = (t0 + t) * p.y_stride + row;
    y[p.y_offset + at] = acc[t] + (p.has_residual != 0u ? res[p.res_offset + at] : 0.0);
  }
}
