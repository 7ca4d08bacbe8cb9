// Elementwise ops on count floats (out may alias an input): OP 0 add, 1 mul, 2 silu,
// 3 silu(a) * b (SwiGLU's gate step). silu(v) = v / (1 + e^-v) as kiln_uk_silu computes
// it; the GPU's exp is not kiln_uk_expf's, so results agree to float rounding.
#version 450

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
  uint count;
  uint a_offset;
  uint b_offset;
  uint out_offset;
} p;

float silu(float v) { return v / (1.0 + exp(-v)); }

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x *
                                              gl_WorkGroupSize.x;
  if (i >= p.count)
    return;
  const float va = a[p.a_offset + i];
  float v;
  if (OP == 0u)
    v = va + b[p.b_offset + i];
  else if (OP == 1u)
    v = va * b[p.b_offset + i];
  else if (OP == 2u)
    v = silu(va);
  else
    v = silu(va) * b[p.b_offset + i];
  o[p.out_offset + i] = v;
}
