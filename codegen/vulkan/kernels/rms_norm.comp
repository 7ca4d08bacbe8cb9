// out[t, i] = (x[t, i] * (1 / sqrt(mean(x[t, :]^2) + eps))) * w[i]: kiln_uk_rms_norm's
// math; w is f32 or f16 (FORMAT), or absent (has_weight 0: kiln.rms_normalize). One
// workgroup per row; the sum of squares is fp32 here (the CPU sums in double: phone GPUs
// have no fp64), so results agree to float rounding, not bit for bit.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0u;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
  uint dim;
  uint w_offset;  // bytes
  uint x_offset;  // floats
  uint out_offset;
  float eps;
  uint has_weight;
} p;

shared float sums[64];

void main() {
  const uint t = gl_WorkGroupID.x;
  const uint xr = p.x_offset + t * p.dim;
  float s = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < p.dim; i += gl_WorkGroupSize.x)
    s += x[xr + i] * x[xr + i];
  s = subgroupAdd(s);
  if (subgroupElect())
    sums[gl_SubgroupID] = s;
  barrier();
  float total = 0.0;
  for (uint g = 0u; g < gl_NumSubgroups; ++g)
    total += sums[g];
  const float scale = 1.0 / sqrt(total / float(p.dim) + p.eps);
  const uint orow = p.out_offset + t * p.dim;
  for (uint i = gl_LocalInvocationID.x; i < p.dim; i += gl_WorkGroupSize.x) {
    float v = x[xr + i] * scale;
    if (p.has_weight != 0u)
      v *= FORMAT == KILN_F16 ? KILN_LOAD_F16(w, p.w_offset + 2u * i)
                              : uintBitsToFloat(w[(p.w_offset >> 2) + i]);
    o[orow + i] = v;
  }
}
