// Shared by kiln's Vulkan kernels: byte-addressed reads of ggml's block formats from a
// buffer of 32-bit words. The plain path: only 32-bit storage access, so it runs on any
// Vulkan 1.1 device; blocks of q8_0 (34 bytes), q4_0 (18) and q4_1 (20) are 2-byte aligned.
#ifndef KILN_VK_COMMON_GLSL
#define KILN_VK_COMMON_GLSL

// ggml type ids (runtime-min/include/kiln/quant.h).
#define KILN_F32 0u
#define KILN_F16 1u
#define KILN_Q4_0 2u
#define KILN_Q4_1 3u
#define KILN_Q8_0 8u

// The 32 bits starting at byte `off`, which is 2-byte aligned.
#define KILN_LOAD_U32(buf, off)                                                         \
  ((((off) & 2u) == 0u) ? buf[(off) >> 2]                                               \
                        : ((buf[(off) >> 2] >> 16) | (buf[((off) >> 2) + 1u] << 16)))
// The 16 bits at byte `off` (2-byte aligned), as a float read from IEEE half.
#define KILN_LOAD_F16(buf, off)                                                         \
  unpackHalf2x16((buf[(off) >> 2] >> (((off) & 2u) * 8u)) & 0xffffu).x

// Byte k (0..3) of a word as a signed value.
#define KILN_S8(word, k) bitfieldExtract(int(word), int(k) * 8, 8)

#endif
