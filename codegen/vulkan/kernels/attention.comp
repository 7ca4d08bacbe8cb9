// out[t, h] = softmax_j(scale * q[t, h] . K[j, g(h)]) V[j, g(h)] over j = 0..positions[t]:
// kiln_uk_attention's math after kv_store.comp has written the batch's rows; g(h) =
// h / (heads / kv_heads). One workgroup per (head, token): scores go to a scratch row of
// max_ctx floats (phone shared memory holds too few for long contexts), then the
// softmax's max and sum meet across the workgroup, then each thread takes output dims.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint K_FORMAT = 0u;
layout(constant_id = 2) const uint V_FORMAT = 0u;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer Cache { uint cache[]; };
layout(std430, binding = 2) readonly buffer Positions { int positions[]; };
layout(std430, binding = 3) coherent buffer Scores { float scores[]; };
layout(std430, binding = 4) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
  uint heads;
  uint kv_heads;
  uint head_dim;
  uint max_ctx;
  float scale;
  uint q_offset;       // floats; q and out are [n, heads * head_dim]
  uint out_offset;
  uint k_cache;        // bytes into the cache buffer, 4-aligned
  uint v_cache;
  uint pos_offset;     // ints
  uint scores_offset;  // floats; heads * n rows of max_ctx
} p;

shared float reduce_buf[64];

float cache_at(uint fmt, uint plane, uint index) {
  if (fmt == KILN_F16) {
    const vec2 pair = unpackHalf2x16(cache[(plane >> 2) + (index >> 1)]);
    return (index & 1u) != 0u ? pair.y : pair.x;
  }
  return uintBitsToFloat(cache[(plane >> 2) + index]);
}

// Combines one value per thread across the workgroup: max when is_max, else sum.
float workgroup_reduce(float v, bool is_max) {
  v = is_max ? subgroupMax(v) : subgroupAdd(v);
  barrier();  // reduce_buf's previous use is over
  if (subgroupElect())
    reduce_buf[gl_SubgroupID] = v;
  barrier();
  float r = reduce_buf[0];
  for (uint g = 1u; g < gl_NumSubgroups; ++g)
    r = is_max ? max(r, reduce_buf[g]) : r + reduce_buf[g];
  return r;
}

void main() {
  const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, n = gl_NumWorkGroups.y;
  const uint d = p.head_dim;
  const uint g = h / (p.heads / p.kv_heads);
  const uint kv_width = p.kv_heads * d;
  const uint len = uint(positions[p.pos_offset + t]) + 1u;
  const uint qb = p.q_offset + (t * p.heads + h) * d;
  const uint sb = p.scores_offset + (t * p.heads + h) * p.max_ctx;

  float mx = -3.402823466e38;
  for (uint j = gl_LocalInvocationID.x; j < len; j += gl_WorkGroupSize.x) {
    float s = 0.0;
    for (uint i = 0u; i < d; ++i)
      s += q[qb + i] * cache_at(K_FORMAT, p.k_cache, j * kv_width + g * d + i);
    s *= p.scale;
    scores[sb + j] = s;
    mx = max(mx, s);
  }
  mx = workgroup_reduce(mx, true);
  float total = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < len; j += gl_WorkGroupSize.x) {
    const float e = exp(scores[sb + j] - mx);
    scores[sb + j] = e;
    total += e;
  }
  total = workgroup_reduce(total, false);
  memoryBarrierBuffer();
  barrier();  // every thread's scores are written before any thread reads them all
  const float inv = 1.0 / total;
  for (uint i = gl_LocalInvocationID.x; i < d; i += gl_WorkGroupSize.x) {
    float acc = 0.0;
    for (uint j = 0u; j < len; ++j)
      acc += scores[sb + j] * cache_at(V_FORMAT, p.v_cache, j * kv_width + g * d + i);
    o[p.out_offset + (t * p.heads + h) * d + i] = acc * inv;
  }
}
