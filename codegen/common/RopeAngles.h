//===- RopeAngles.h - the rotary angles every RoPE implementation uses ----===//
//
// One definition for the reference executor's rope and the tables the compiled code reads,
// so the two agree bit for bit. Pair i's angle at position p is p * theta^(-2i/d), built by
// repeated multiplication in float exactly as ggml's rope does (logits then match
// llama.cpp closely), divided by the pair's frequency factor when the model has them
// (Llama 3's rope_freqs; ggml divides the same way). No LLVM/MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_COMMON_ROPEANGLES_H
#define KILN_CODEGEN_COMMON_ROPEANGLES_H

#include <cmath>
#include <cstdint>

namespace kiln::codegen {

// Writes rotaryDims / 2 angles; `freqFactors` is null or holds rotaryDims / 2 values.
inline void ropeAngles(float position, float theta, int32_t rotaryDims,
                       const float *freqFactors, float *angles) {
  const float thetaScale = std::pow(theta, -2.0f / float(rotaryDims));
  float angle = position;
  for (int32_t i = 0; i < rotaryDims / 2; ++i) {
    angles[i] = freqFactors ? angle / freqFactors[i] : angle;
    angle *= thetaScale;
  }
}

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_ROPEANGLES_H
