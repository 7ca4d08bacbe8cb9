//===- Passes.td - precision assignment passes ---------------*- tablegen -*-===//
#ifndef KILN_PASSES_PRECISION_PASSES_TD
#define KILN_PASSES_PRECISION_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnAssignUniformFormat : Pass<"kiln-assign-uniform-format", "mlir::ModuleOp"> {
  let summary = "store every weight matrix in one storage format";
  let description = [{
    Sets the storage `format` of every op that reads a weight matrix (embed, linear,
    logits) to the given format. Norm scales keep f32 (their format is left unset). Rows whose
    length is not a multiple of the format's block are padded later by the weight layout,
    never refused. The simplest precision policy; `--precision` policies driven by
    measured sensitivity will sit beside it.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"f32\"",
           "storage format: f32, f16, q8_0, q6_k, q5_k, q4_k, q4_0, q4_1 or q3_0">,
  ];
}

def KilnAssignSourceFormat : Pass<"kiln-assign-source-format", "mlir::ModuleOp"> {
  let summary = "keep each weight in its source format where kiln stores it";
  let description = [{
    For every op that reads a weight (embed, linear, logits, rms_norm), keeps the format
    the frontend read from the model file when the code generators store it (f32, f16,
    q8_0, q4_0, q4_1, q3_0; with `keep-kquants` also q6_K, q5_K, q4_K): a llama.cpp Q4_0
    file keeps its formats and is repacked losslessly. Any other format becomes the
    smallest 32-element block format with more bits per weight, so the second rounding is
    the finer one (precision::sourceFormat: q5_0, q5_K, q6_K -> q8_0, q4_K, iq4_nl -> q4_1,
    bf16 -> f32, ...), and one remark lists every requantisation (`requantised 48 q4_K ->
    q4_1, 9 q6_K -> q8_0`, `1 iq4_xs -> q4_0`, ...). K-quants without integer-dot kernels
    on the target compute in fp32 (6.5x slower decode than q4_1/q8_0's integer kernels on
    the Llama-3.2-1B shape, docs/perf.md), so they are requantised unless kept:
    `keep-packed-kquants` keeps them where the target reads them with integer-dot kernels
    (q4_K_r16 / q5_K_r16 / q6_K_r16 on x86 and NEON; `kiln compile` sets it for targets
    that have them), `keep-kquants` keeps them for any target. Norm
    scales keep f16, else f32. Must run before any other precision pass.
    `kiln compile`'s default (`--precision source`; `--precision lossless` keeps K-quants).
  }];
  let options = [
    Option<"keepKQuants", "keep-kquants", "bool", /*default=*/"false",
           "keep q4_K, q5_K and q6_K weights as the file stores them">,
    Option<"keepPackedKQuants", "keep-packed-kquants", "bool", /*default=*/"false",
           "keep q4_K, q5_K and q6_K: the target reads them with integer-dot kernels (r16)">,
  ];
}

def KilnAssignRulesFormat : Pass<"kiln-assign-rules-format", "mlir::ModuleOp"> {
  let summary = "storage format per tensor class (rules)";
  let description = [{
    `rules` is `class=format,...` (passes/precision/PrecisionSpec.h): classes attn_q,
    attn_k, attn_v, attn_qkv, attn_output, ffn_gate, ffn_up, ffn_down, ffn, embedding,
    output, norms, and `default=` for the classes not named (f32 unless given; norms keep
    f32 when the default is not f32/f16). A weight read by two ops (a tied embedding and
    classifier) takes the format of the class that was named; two named classes that
    disagree are an error.
  }];
  let options = [
    Option<"rules", "rules", "std::string", /*default=*/"\"\"",
           "class=format,... (e.g. attn_qkv=q4_0,ffn=q8_0,norms=f16,default=q8_0)">,
  ];
}

def KilnApplyPrecisionMap : Pass<"kiln-apply-precision-map", "mlir::ModuleOp"> {
  let summary = "storage format per weight name (an explicit precision map)";
  let description = [{
    `map` is `weight=format,...`; every op reading a named weight gets that format, the
    others keep theirs. A name no op reads, or a norm scale given a format other than
    f32/f16, is an error. The measured search (compiler/pipelines/PrecisionSearch) writes
    its decision through this pass.
  }];
  let options = [
    Option<"map", "map", "std::string", /*default=*/"\"\"",
           "weight=format,... (e.g. blk.0.attn_q.weight=q4_0,output_norm.weight=f16)">,
  ];
}

def KilnRotateResidual : Pass<"kiln-rotate-residual", "mlir::ModuleOp"> {
  let summary = "rotate the residual stream by a randomised Hadamard matrix, folded into the weights";
  let description = [{
    QuaRot / SpinQuant's rotation at zero run-time cost: with Q = H D / sqrt(n)
    (models/weights/HadamardRotation.h) the residual stream becomes Q x. Every RMSNorm on
    the stream loses its scale to the linears that read it (W diag(g), then
    `kiln.rms_normalize`: RMS is unchanged by Q), each of those linears and the classifier
    read W Q^T (`rotate_rows`), the embedding table stores E Q^T and the linears that add to
    the stream (attention output, FFN down; a bias too) write Q W (`rotate_cols`). In exact
    arithmetic the model computes the same logits; what changes is how the weights quantise
    (outlier channels are spread over all of them), so it runs before precision and the
    rotated weights are fp32. The rotated names end in `:rotated`.
    Refused with one error where the stream is not only embed / add / rms_norm (a reader
    that is not a linear), its width has no Hadamard matrix here (a power of two, or a
    Paley order such as 12 or 20 times one: 3072 and 5120 are covered), or the classifier
    shares the embedding table (rotating would store a second table).
  }];
  let options = [
    Option<"seed", "seed", "int64_t", /*default=*/"1", "seed of D's random signs">,
  ];
  let statistics = [
    Statistic<"numRotated", "rotated", "weights rotated">,
  ];
}

#endif // KILN_PASSES_PRECISION_PASSES_TD
