//===- KilnBase.td - kiln dialect definition and enums -------*- tablegen -*-===//
#ifndef KILN_BASE_TD
#define KILN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "LLM-level ops for Llama-family decoders";
  let description = [{
    Ops on rank-2 activation tensors `[tokens, features]`; the token dimension is dynamic
    so one function serves prefill (many tokens) and decode (one token). Weights live in a
    weight store outside the IR and are referenced by name; their storage format is an
    attribute of the op that reads them. Attention owns a per-layer KV cache that it
    appends to and reads from.

    The `kiln.*` attributes passes leave on ops and on the module are declared in
    `dialects/kiln/IR/KilnAttrNames.h` and checked by the dialect: an unknown name or a
    value of the wrong kind is a verifier error at the op that carries it.
  }];
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
}

// Storage formats of weights. Values are ggml's type ids for the formats GGUF shares
// with ggml; kiln's own formats take ids from 1100 up (kiln/quant.h; 1000 + a ggml id is
// reserved for that format's r16 repacking). Ids are never reused.
def Kiln_FormatF32   : I32EnumAttrCase<"f32", 0>;
def Kiln_FormatF16   : I32EnumAttrCase<"f16", 1>;
def Kiln_FormatQ4_0  : I32EnumAttrCase<"q4_0", 2>;
def Kiln_FormatQ4_1  : I32EnumAttrCase<"q4_1", 3>;
def Kiln_FormatQ5_0  : I32EnumAttrCase<"q5_0", 6>;
def Kiln_FormatQ5_1  : I32EnumAttrCase<"q5_1", 7>;
def Kiln_FormatQ8_0  : I32EnumAttrCase<"q8_0", 8>;
def Kiln_FormatQ2_K  : I32EnumAttrCase<"q2_k", 10>;
def Kiln_FormatQ3_K  : I32EnumAttrCase<"q3_k", 11>;
def Kiln_FormatQ4_K  : I32EnumAttrCase<"q4_k", 12>;
def Kiln_FormatQ5_K  : I32EnumAttrCase<"q5_k", 13>;
def Kiln_FormatQ6_K  : I32EnumAttrCase<"q6_k", 14>;
def Kiln_FormatIQ4NL : I32EnumAttrCase<"iq4_nl", 20>;
def Kiln_FormatIQ4XS : I32EnumAttrCase<"iq4_xs", 23>;
def Kiln_FormatBF16  : I32EnumAttrCase<"bf16", 30>;
def Kiln_FormatQ3_0  : I32EnumAttrCase<"q3_0", 1100>; // KILN_TYPE_Q3_0

def Kiln_StorageFormat : I32EnumAttr<"StorageFormat", "weight storage format", [
    Kiln_FormatF32, Kiln_FormatF16, Kiln_FormatQ4_0, Kiln_FormatQ4_1, Kiln_FormatQ5_0,
    Kiln_FormatQ5_1, Kiln_FormatQ8_0, Kiln_FormatQ2_K, Kiln_FormatQ3_K, Kiln_FormatQ4_K,
    Kiln_FormatQ5_K, Kiln_FormatQ6_K, Kiln_FormatIQ4NL, Kiln_FormatIQ4XS,
    Kiln_FormatBF16, Kiln_FormatQ3_0]> {
  let cppNamespace = "::kiln";
}

// Which elements RoPE rotates together: (2i, 2i+1) as llama.cpp's "norm" mode and
// llama2.c do, or (i, i + d/2) as Hugging Face's rotate_half / llama.cpp's NeoX mode.
def Kiln_RopeAdjacent   : I32EnumAttrCase<"adjacent", 0>;
def Kiln_RopeRotateHalf : I32EnumAttrCase<"rotate_half", 1>;
def Kiln_RopeStyle : I32EnumAttr<"RopeStyle", "rotary embedding pairing",
    [Kiln_RopeAdjacent, Kiln_RopeRotateHalf]> {
  let cppNamespace = "::kiln";
}

// How a matrix's rows are stored for the target's kernels (kiln-assign-layout's
// `kiln.layout`, printed `#kiln.layout<r16>`): padded to whole blocks, plain rows aligned to
// kiln.row_align, or interleaved in groups of 16 / 32 rows (kiln/quant_packed.h). The
// values are codegen::RowLayout's (static_assert in codegen/cpu/LowerToUkernels.cpp).
def Kiln_LayoutBlock  : I32EnumAttrCase<"block", 0>;
def Kiln_LayoutRows64 : I32EnumAttrCase<"rows64", 1>;
def Kiln_LayoutR16    : I32EnumAttrCase<"r16", 2>;
def Kiln_LayoutR32    : I32EnumAttrCase<"r32", 3>;
def Kiln_Layout : I32EnumAttr<"Layout", "weight row layout",
    [Kiln_LayoutBlock, Kiln_LayoutRows64, Kiln_LayoutR16, Kiln_LayoutR32]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_LayoutAttr : EnumAttr<Kiln_Dialect, Kiln_Layout, "layout"> {
  let assemblyFormat = "`<` $value `>`";
}

// What a derived weight's recipe does to its source(s) (`kiln.derived_weights`,
// models/weights/DerivedWeights.h); the dialect checks each recipe's fields.
def Kiln_DeriveSelectRows     : I32EnumAttrCase<"select_rows", 0>;
def Kiln_DeriveSelectCols     : I32EnumAttrCase<"select_cols", 1>;
def Kiln_DeriveScale          : I32EnumAttrCase<"scale", 2>;
def Kiln_DeriveScaleCols      : I32EnumAttrCase<"scale_cols", 3>;
def Kiln_DeriveConcatRows     : I32EnumAttrCase<"concat_rows", 4>;
def Kiln_DeriveInterleaveRows : I32EnumAttrCase<"interleave_rows", 5>;
def Kiln_DeriveValues         : I32EnumAttrCase<"values", 6>;
def Kiln_DeriveRotateRows     : I32EnumAttrCase<"rotate_rows", 7>;
def Kiln_DeriveRotateCols     : I32EnumAttrCase<"rotate_cols", 8>;
def Kiln_DeriveOp : I32EnumAttr<"DeriveOp", "derived-weight recipe", [
    Kiln_DeriveSelectRows, Kiln_DeriveSelectCols, Kiln_DeriveScale, Kiln_DeriveScaleCols,
    Kiln_DeriveConcatRows, Kiln_DeriveInterleaveRows, Kiln_DeriveValues,
    Kiln_DeriveRotateRows, Kiln_DeriveRotateCols]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

class Kiln_Op<string mnemonic, list<Trait> traits = []> :
    Op<Kiln_Dialect, mnemonic, traits>;

def Kiln_Activations : RankedTensorOf<[F32]>;
def Kiln_TokenIds : RankedTensorOf<[I32]>;

#endif // KILN_BASE_TD
