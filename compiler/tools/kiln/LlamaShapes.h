//===- LlamaShapes.h - bytes decode reads, from a Llama's hyper-parameters ---===//
//
// `kiln predict` estimates a model it has not compiled (a multi-GB artifact is not needed
// to know how many bytes decode reads): the weights each token reads, stored as
// `kiln compile` would store them, and the KV cache bytes per position.
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_LLAMASHAPES_H
#define KILN_TOOLS_KILN_LLAMASHAPES_H

#include <cstdint>
#include <string>
#include <vector>

#include "dialects/kiln/IR/KvFormat.h"
#include "passes/precision/PrecisionSpec.h"

namespace kiln::tool {

struct LlamaShape {
  std::string name; // llama-3.2-1b
  uint64_t dim = 0, layers = 0, heads = 0, kvHeads = 0, ffn = 0, vocab = 0;
  bool tied = false;  // classifier shares the token embedding
  std::string source; // where the numbers are published
};

const std::vector<LlamaShape> &knownLlamaShapes();
const LlamaShape *findLlamaShape(const std::string &name);
// "" when the shape is usable, else one line naming the bad field.
std::string checkLlamaShape(const LlamaShape &s);

// Bytes of weights one decoded token reads, as LowerToUkernels counts them (every matrix
// once, one embedding row, the norms), each stored as kiln compile's default layout
// stores it (r16 groups for q4_0/q4_1/q8_0 linears, 64-byte rows for f32/f16 linears,
// plain rows for the embedding and a classifier tied to it in the same format).
uint64_t decodeWeightBytes(const LlamaShape &s, const precision::Rules &formats);
// K and V bytes of one position over all layers.
uint64_t kvBytesPerPosition(const LlamaShape &s, KvFormat kv);
// Multiply-adds of one decoded token: every matrix (the classifier included) once, and
// attention's scores and weighted sum over ctx positions.
uint64_t decodeMacs(const LlamaShape &s, uint64_t ctx);

struct PredictOptions;
// The shape, formats and KV format `kiln predict` options name (shared by thermal-sim);
// false + one line on a bad option.
bool resolvePredictModel(const PredictOptions &opts, LlamaShape &shape,
                         precision::Rules &rules, KvFormat &kv, std::string &error);

} // namespace kiln::tool

#endif // KILN_TOOLS_KILN_LLAMASHAPES_H
