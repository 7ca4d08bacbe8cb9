// linear.comp's variant for devices with integer dot products (VK_KHR_shader_integer_dot_
// product, core in Vulkan 1.3): the same bindings, push constants and result layout, so the
// runtime swaps it in per device (docs/vulkan.md, "Kernel variants").
//
// q8_0 and q4_0 rows meet the activations as the CPU's integer kernels meet them
// (packed_common.h): each token's x quantised to int8 blocks of 32 with ggml's q8_0 rule
// (d = amax / 127, q = round to nearest even of x / d), then four int8 products a
// dot-product instruction - OpSDot for q8_0's signed codes, OpSUDot for q4_0's nibbles,
// whose -8 comes back as -8 x the block's code sum - and the block's sum scaled by
// d_w * d_x. x goes through shared memory a chunk at a time, so any row length fits the
// 16 KiB Vulkan guarantees. f32, f16, q4_1 and K-quant rows take linear.comp's float path.
// bookworm's glslang 12 has no GL_EXT_integer_dot_product: GL_EXT_spirv_intrinsics names the
// SPIR-V instructions directly.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0u;
layout(constant_id = 2) const uint ROWS = 2u;
layout(constant_id = 3) const uint TOKENS = 1u;

#include "linear_common.glsl"

// Capabilities DotProduct (6019) and DotProductInput4x8BitPacked (6018); the last operand is
// PackedVectorFormat4x8Bit (0).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450)
int sdot4x8(uint a, uint b, spirv_literal uint packed);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4452)
int sudot4x8(uint signed_a, uint unsigned_b, spirv_literal uint packed);

const uint CHUNK = 2048u;          // activations quantised per pass
shared uint qx[CHUNK / 4u];        // int8 codes, 4 a word
shared float dx[CHUNK / 32u];      // each block's scale
shared int sx[CHUNK / 32u];        // each block's code sum
shared float partial[ROWS * TOKENS * 64];

// Quantises x[xb + c0 .. c0 + CHUNK) into the shared arrays (zero codes past in_features).
void quantise(uint xb, uint c0) {
  for (uint qb = gl_LocalInvocationID.x; qb < CHUNK / 32u; qb += gl_WorkGroupSize.x) {
    const uint i0 = c0 + 32u * qb;
    float v[32];
    float amax = 0.0;
    for (uint j = 0u; j < 32u; ++j) {
      v[j] = i0 + j < p.in_features ? x[xb + i0 + j] : 0.0;
      amax = max(amax, abs(v[j]));
    }
    const float d = amax / 127.0;
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    int sum = 0;
    for (uint k = 0u; k < 8u; ++k) {
      uint word = 0u;
      for (uint j = 0u; j < 4u; ++j) {
        const int q = int(roundEven(v[4u * k + j] * id));
        sum += q;
        word |= (uint(q) & 0xffu) << (8u * j);
      }
      qx[8u * qb + k] = word;
    }
    dx[qb] = d;
    sx[qb] = sum;
  }
}

// Block b of the row at row_off against the quantised block qb of the chunk.
float block_dot_int(uint row_off, uint b, uint qb) {
  int s = 0;
  float dw;
  if (FORMAT == KILN_Q8_0) {
    const uint off = row_off + 34u * b;
    dw = KILN_LOAD_F16(w, off);
    for (uint k = 0u; k < 8u; ++k)
      s += sdot4x8(KILN_LOAD_U32(w, off + 2u + 4u * k), qx[8u * qb + k], 0u);
  } else {
    const uint off = row_off + 18u * b;
    dw = KILN_LOAD_F16(w, off);
    for (uint k = 0u; k < 4u; ++k) {
      const uint word = KILN_LOAD_U32(w, off + 2u + 4u * k);
      s += sudot4x8(qx[8u * qb + k], word & 0x0f0f0f0fu, 0u) +
           sudot4x8(qx[8u * qb + 4u + k], (word >> 4) & 0x0f0f0f0fu, 0u);
    }
    s -= 8 * sx[qb];
  }
  return float(s) * (dw * dx[qb]);
}

void main() {
  const bool integer = FORMAT == KILN_Q8_0 || FORMAT == KILN_Q4_0;
  const uint per_block = elems_per_block();
  const uint blocks = (p.in_features + per_block - 1u) / per_block;
  const bool tail = blocks * per_block != p.in_features;
  const uint t0 = gl_WorkGroupID.y * TOKENS;
  const uint tokens = min(TOKENS, p.n - t0);
  const uint row0 = gl_WorkGroupID.x * ROWS;

  float acc[ROWS * TOKENS];
  for (uint k = 0u; k < ROWS * TOKENS; ++k)
    acc[k] = 0.0;
  if (integer) {
    for (uint t = 0u; t < tokens; ++t) {
      const uint xb = p.x_offset + (t0 + t) * p.in_features;
      for (uint c0 = 0u; c0 < blocks * 32u; c0 += CHUNK) {
        barrier();  // the previous chunk's reads are done
        quantise(xb, c0);
        barrier();
        const uint chunk_blocks = min(CHUNK / 32u, blocks - c0 / 32u);
        for (uint qb = gl_LocalInvocationID.x; qb < chunk_blocks; qb += gl_WorkGroupSize.x)
          for (uint r = 0u; r < ROWS; ++r) {
            const uint row = row0 + r;
            if (row < p.out_features)
              acc[r * TOKENS + t] +=
                  block_dot_int(p.w_offset + row * p.row_stride, c0 / 32u + qb, qb);
          }
      }
    }
  } else {  // linear.comp's float path
    for (uint b = gl_LocalInvocationID.x; b < blocks; b += gl_WorkGroupSize.x)
      for (uint r = 0u; r < ROWS; ++r) {
        const uint row = row0 + r;
        if (row >= p.out_features || (tail && b == blocks - 1u))
          continue;
        for (uint t = 0u; t < tokens; ++t)
          acc[r * TOKENS + t] += block_dot(p.w_offset + row * p.row_stride, b,
                                           p.x_offset + (t0 + t) * p.in_features);
      }
    if (tail && gl_LocalInvocationID.x == 0u)
      for (uint r = 0u; r < ROWS; ++r) {
        const uint row = row0 + r;
        if (row >= p.out_features)
          continue;
        for (uint t = 0u; t < tokens; ++t)
          acc[r * TOKENS + t] += tail_dot(p.w_offset + row * p.row_stride, blocks - 1u,
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
