//===- PrecisionSpec.h - format names, tensor classes, stored sizes -------===//
//
// The vocabulary of precision assignment, shared by the passes, the search and the
// driver: format names (with the int8/int4/int4m aliases), the tensor class of each
// weight read, `rules:` lists, and the bytes a tensor takes as the weight layout stores
// it. No MLIR.
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_PRECISION_PRECISIONSPEC_H
#define KILN_PASSES_PRECISION_PRECISIONSPEC_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::precision {

// Type id of f32, f16, q8_0 (int8), q6_k, q5_k, q4_k (ggml's K-quants, also spelt q6_K...),
// q4_0 (int4), q4_1 (int4m) or kiln's q3_0 (int3, KILN_TYPE_Q3_0): the formats the code
// generators store and compute with. False for any other name.
bool parseFormat(const std::string &name, uint32_t &id);
std::string formatName(uint32_t id); // "q4_0"; "?" for an id outside the list
// Every supported format, largest first.
const std::vector<uint32_t> &supportedFormats();
// Whether the auto search tries `id` for a weight of rows of `rowLength` elements: a K-quant
// only where the rows fill its 256-element super-blocks (padding a 64-wide row to 256 would
// store 4x the bytes), every other supported format always.
bool candidateFormat(uint32_t id, uint64_t rowLength);
// The names parseFormat takes, for error messages ("f32, f16, q8_0 (int8), ...").
const char *formatList();
// Formats a norm scale may take (the rms_norm kernel reads f32 or f16).
bool normFormat(uint32_t id);
// What `--precision source` stores a weight in whose source format (ggml id, as the
// frontend read it) is `source`: that format when it is supported, else the smallest
// supported format with more bits per weight (the second rounding then has a finer grid
// than the first and adds little; into as many bits or fewer it would add about as much
// error again), among the 32-element block formats (the source's rows need not fill a
// K-quant's 256): q5_0/q5_1 -> q8_0, iq4_nl -> q4_1, iq4_xs -> q4_0, q3_K/q2_K -> q3_0,
// bf16 -> f32 (exact). q4_K, q5_K and q6_K are kept with keepKQuants or keepPackedKQuants
// (the target's integer-dot kernels read them), else q4_K -> q4_1 and
// q5_K/q6_K -> q8_0 (formats with integer-dot kernels). A norm scale (`norm`) keeps
// f16, else f32 (the llama frontend reads every norm scale as f32, which an f16 one
// converts to exactly).
uint32_t sourceFormat(uint32_t source, bool norm, bool keepKQuants = false,
                      bool keepPackedKQuants = false);

// Tensor classes: attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down,
// embedding, output, norms.
const std::vector<std::string> &tensorClasses();
// The class of a weight read by op kind ("embed", "rms_norm", "linear", "logits") and
// weight name ("blk.3.ffn_up.weight"); "" when a linear weight's name has no known class.
std::string classOf(const std::string &opKind, const std::string &weight);

// `class=fmt,...` with the group names attn_qkv (q, k, v) and ffn (gate, up, down) and
// `default=fmt` for every class not named (f32 unless given).
struct Rules {
  std::map<std::string, uint32_t> byClass; // explicitly named classes
  uint32_t defaultFormat = 0;              // f32
  // The format of a class and whether it was named explicitly.
  uint32_t formatOf(const std::string &cls, bool *explicitly = nullptr) const;
};
bool parseRules(const std::string &text, Rules &out, std::string &error);

// `weight=fmt,...` (an explicit precision map, e.g. the auto search's result).
bool parseMap(const std::string &text, std::map<std::string, uint32_t> &out,
              std::string &error);
std::string printMap(const std::map<std::string, uint32_t> &map);

// Bytes of `rows` rows of `rowLength` elements in `format`, each row padded with zeros to
// a whole block (codegen/common/WeightLayout); 0 for an unknown format. `linearLayout`:
// the weight of a linear/logits, which kiln-assign-layout stores in groups of `packRows`
// rows (q4_0/q4_1/q8_0: 16, or 32 for HVX targets; 0: the rows64 layout), rows whose stride
// is a multiple of `rowAlign` (f32/f16, and every format under rows64) or block rows (q3_0):
// counted with that padding, as WeightLayout stores it (--layout none only stores less).
uint64_t storedBytes(uint32_t format, uint64_t rowLength, uint64_t rows,
                     bool linearLayout = false, uint32_t packRows = 16,
                     uint64_t rowAlign = 64);

} // namespace kiln::precision

#endif // KILN_PASSES_PRECISION_PRECISIONSPEC_H
