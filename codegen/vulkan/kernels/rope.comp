// In-place rotary embedding of x [n, width] (heads of head_dim): kiln_uk_rope's math and
// tables (cos/sin [position, rotary_dims / 2] f32, precomputed by the compiler and read
// from the weights buffer). Pair i is (2i, 2i + 1), or (i, i + half) with rotate_half.
// One thread per (pair, head) of a token (gl_GlobalInvocationID.y).
#version 450

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Tables { float tables[]; };
layout(std430, binding = 1) buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Positions { int positions[]; };

layout(push_constant) uniform Params {
  uint n;
  uint width;
  uint head_dim;
  uint rotary_dims;
  uint rotate_half;
  uint x_offset;    // floats
  uint cos_offset;  // floats into the tables buffer
  uint sin_offset;
  uint pos_offset;  // ints
} p;

void main() {
  const uint half_dims = p.rotary_dims / 2u;
  const uint heads = p.width / p.head_dim;
  const uint g = gl_GlobalInvocationID.x;
  const uint t = gl_GlobalInvocationID.y;
  if (g >= half_dims * heads || t >= p.n)
    return;
  const uint h = g / half_dims, i = g % half_dims;
  const uint step = p.rotate_half != 0u ? 1u : 2u;
  const uint off = p.rotate_half != 0u ? half_dims : 1u;
  const uint a = uint(positions[p.pos_offset + t]) * half_dims + i;
  const float c = tables[p.cos_offset + a], s = tables[p.sin_offset + a];
  const uint base = p.x_offset + t * p.width + h * p.head_dim + i * step;
  const float x0 = x[base], x1 = x[base + off];
  x[base] = x0 * c - x1 * s;
  x[base + off] = x0 * s + x1 * c;
}
