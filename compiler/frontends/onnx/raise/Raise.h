//===- Raise.h - phase 2: ONNX structures -> kiln.* nodes -----------------===//
//
// Each pattern finds one structure exporters write (a linear layer, an RMSNorm, a
// rotate-half RoPE, ...) and replaces its root node by one node of domain "kiln" whose
// inputs are the structure's real inputs; the nodes left unread disappear. Shapes and
// small tensors come from two probe runs of the original graph (OnnxInterp.h) with the
// symbolic dimensions bound to different numbers, so a pattern can check what a Reshape
// target, a cos/sin table or a mask really is instead of guessing from names.
//
// Raised nodes (inputs; attributes):
//   kiln.Embedding(table, ids)
//   kiln.Linear(x, weight; transposed=1 when the weight is stored [in, out])
//   kiln.RmsNorm(x, weight; epsilon)
//   kiln.SwiGlu(gate, up)
//   kiln.Rope(x_heads; theta, dims, style "rotate_half" | "adjacent", heads, head_dim)
//   kiln.Attention(q_rope, k_rope, v_heads; heads, kv_heads, head_dim, scale, [past_key,
//                  past_value, present_key, present_value])
//   kiln.Add(a, b)
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_RAISE_RAISE_H
#define KILN_FRONTENDS_ONNX_RAISE_RAISE_H

#include <map>
#include <string>
#include <vector>

#include "compiler/frontends/onnx/OnnxGraph.h"
#include "compiler/frontends/onnx/OnnxInterp.h"

namespace kiln::onnx {

struct RaiseContext {
  Graph &g;
  // Probe results of the original graph under two bindings of the symbolic dimensions.
  std::map<std::string, Value> probe, probe2;
  // Sequence and past lengths of the two bindings; past is 0 when the graph has no
  // past_key_values inputs.
  int64_t seqLen = 5, pastLen = 3, seqLen2 = 7, pastLen2 = 4;
  bool hasPast = false;

  explicit RaiseContext(Graph &graph) : g(graph) {}
  // Recomputes the producer index; patterns call it after rewriting.
  void reindex();
  // The node producing `value`, or null for inputs, initializers and unknown values.
  const Node *def(const std::string &value) const;
  // Follows Identity and Cast nodes that do not change the element type class.
  std::string skipCasts(std::string value) const;
  // An initializer, possibly behind Cast nodes (fp16 weights cast to float).
  const Tensor *constant(const std::string &value, std::string *name = nullptr) const;
  // A one-element constant, or a value the probes computed with the same single
  // element under both bindings (a scale that depends on nothing).
  bool scalar(const std::string &value, double &out) const;
  // Dimensions of `value` in the first probe (empty when unknown).
  std::vector<int64_t> dims(const std::string &value) const;
  // Probe data of `value` in the first / second binding, null when not computed.
  const Value *data(const std::string &value) const;
  const Value *data2(const std::string &value) const;
  // Replaces the node producing `node.outputs[0]` by `node`.
  void replace(Node node);

private:
  std::map<std::string, int> producer_;
};

// `heads` = Transpose(Reshape(src, [B, S, H, D]), perm [0, 2, 1, 3]): the split of a
// [B, S, H*D] activation into heads, as attention code writes it. Sets `src`.
bool headSplitOf(const RaiseContext &c, const std::string &heads, std::string &src);
// The inverse: `merged` = Reshape(Transpose(x, perm [0, 2, 1, 3]), [B, S, H*D]). Sets `x`.
bool headMergeOf(const RaiseContext &c, const std::string &merged, std::string &x);

// A node of domain "kiln" producing `out` from `inputs`.
Node kilnNode(const std::string &op, const std::string &out,
              std::vector<std::string> inputs, const std::string &name);
void setInt(Node &n, const std::string &key, int64_t v);
void setFloat(Node &n, const std::string &key, float v);
void setFloats(Node &n, const std::string &key, std::vector<float> v);
void setString(Node &n, const std::string &key, const std::string &v);

// Patterns, in the order raiseGraph runs them. Each returns the number of structures it
// raised, or -1 with `error` set when a structure it recognised fails a check (a rotary
// table that is no RoPE, a mask that is not causal).
int raiseNoopCasts(RaiseContext &c, std::string &error);
int raiseLinear(RaiseContext &c, std::string &error);
int raiseEmbedding(RaiseContext &c, std::string &error);
int raiseRmsNorm(RaiseContext &c, std::string &error);
int raiseSwiGlu(RaiseContext &c, std::string &error);
int raiseRope(RaiseContext &c, std::string &error);
int raiseAttention(RaiseContext &c, std::string &error);
int raiseResidual(RaiseContext &c, std::string &error);

// Probes `g`, runs every pattern and drops what no longer feeds an output. `counts`
// receives pattern name -> structures raised.
bool raiseGraph(Graph &g, std::map<std::string, int> &counts, std::string &error);

} // namespace kiln::onnx

#endif // KILN_FRONTENDS_ONNX_RAISE_RAISE_H
