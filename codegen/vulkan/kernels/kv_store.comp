// The store step of kiln_uk_attention: each token's k and v rows (kv_heads * head_dim
// floats) go to row positions[t] of one layer's cache planes, in K_FORMAT / V_FORMAT (f32
// or f16; an f16 row is written as pairs, so kv_width is even). Run before attention.comp
// so that every token of a batch sees the rows of the tokens before it.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint K_FORMAT = 0u;
layout(constant_id = 2) const uint V_FORMAT = 0u;

layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) buffer Cache { uint cache[]; };
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };

layout(push_constant) uniform Params {
  uint n;
  uint kv_width;   // kv_heads * head_dim
  uint k_offset;   // floats
  uint v_offset;
  uint k_cache;    // bytes into the cache buffer, 4-aligned
  uint v_cache;
  uint pos_offset; // ints
} p;

void store(uint fmt, uint plane, uint row, uint pair, float a, float b) {
  if (fmt == KILN_F16) {
    cache[(plane >> 2) + row * (p.kv_width / 2u) + pair] = packHalf2x16(vec2(a, b));
  } else {
    const uint base = (plane >> 2) + row * p.kv_width + 2u * pair;
    cache[base] = floatBitsToUint(a);
    cache[base + 1u] = floatBitsToUint(b);
  }
}

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint t = gl_GlobalInvocationID.y;
  if (pair >= p.kv_width / 2u || t >= p.n)
    return;
  const uint row = uint(positions[p.pos_offset + t]);
  const uint src = t * p.kv_width + 2u * pair;
  store(K_FORMAT, p.k_cache, row, pair, k[p.k_offset + src], k[p.k_offset + src + 1u]);
  store(V_FORMAT, p.v_cache, row, pair, v[p.v_offset + src], v[p.v_offset + src + 1u]);
}
