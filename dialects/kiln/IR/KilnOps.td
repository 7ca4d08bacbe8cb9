//===- KilnOps.td - kiln dialect operations ------------------*- tablegen -*-===//
#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "dialects/kiln/IR/KilnBase.td"
include "dialects/kiln/IR/KilnInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kiln_EmbedOp : Kiln_Op<"embed", [Pure, DeclareOpInterfaceMethods<Kiln_WeightReaderOpInterface>]> {
  let summary = "token embedding lookup";
  let description = [{
    Row `tokens[t]` of the `[vocab, dim]` table named `weight`. Out-of-range ids are an
    execution error, not undefined behaviour.

    ```mlir
    %x = kiln.embed %tokens weight "token_embd.weight" format f32
        : tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_TokenIds:$tokens, StrAttr:$weight,
                       Kiln_StorageFormat:$format);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = [{
    $tokens `weight` $weight `format` $format attr-dict `:` type($tokens) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_RmsNormOp : Kiln_Op<"rms_norm", [Pure, DeclareOpInterfaceMethods<Kiln_WeightReaderOpInterface>, SameOperandsAndResultType]> {
  let summary = "RMS normalisation with a learned per-feature scale";
  let description = [{
    `y = x / sqrt(mean(x^2) + eps) * weight`, per token (row).

    The optional `format` stores the scale in f16 instead of f32 (precision assignment,
    `norms=f16`); absent means f32.

    ```mlir
    %y = kiln.rms_norm %x weight "blk.0.attn_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
    %z = kiln.rms_norm %x weight "output_norm.weight" eps 1.0e-05 format f16 : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$input, StrAttr:$weight, F32Attr:$eps,
                       OptionalAttr<Kiln_StorageFormat>:$format);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = [{
    $input `weight` $weight `eps` $eps (`format` $format^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Kiln_LinearOp : Kiln_Op<"linear", [Pure, DeclareOpInterfaceMethods<Kiln_WeightReaderOpInterface>]> {
  let summary = "x times the transpose of a stored [out, in] weight";
  let description = [{
    `y[t, o] = sum_i x[t, i] * W[o, i] (+ b[o])` with `W` read from the weight store in the
    given storage format. The optional `bias` names a 1-D `[out_features]` f32 weight added
    to every row (the slimming compensation writes one).

    ```mlir
    %q = kiln.linear %x weight "blk.0.attn_q.weight" format f32
        : tensor<?x64xf32> -> tensor<?x64xf32>
    %d = kiln.linear %g weight "blk.0.ffn_down.weight" bias "blk.0.ffn_down.comp_bias"
        format f32 : tensor<?x172xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$input, StrAttr:$weight,
                       Kiln_StorageFormat:$format, OptionalAttr<StrAttr>:$bias);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = [{
    $input `weight` $weight (`bias` $bias^)? `format` $format attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_RopeOp : Kiln_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of every head";
  let description = [{
    Rotates the first `rotary_dims` elements of each `head_dim`-wide head of token `t` by
    angles `positions[t] * theta^(-2i/rotary_dims)`; `style` chooses which elements form a
    pair. The remaining `head_dim - rotary_dims` elements pass through.

    `freq_factors` (one positive value per pair, Llama 3's `rope_freqs`) divides pair i's
    angle by `freq_factors[i]`, as llama.cpp's rope does with its frequency-factor tensor.

    ```mlir
    %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e+04 style adjacent
        : tensor<?x64xf32>, tensor<?xi32>
    %kr = kiln.rope %k, %pos head_dim 4 rotary_dims 4 theta 5.0e+05 style adjacent
        freq_factors [1.000000e+00, 8.000000e+00] : tensor<?x32xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$input, Kiln_TokenIds:$positions,
                       I32Attr:$head_dim, I32Attr:$rotary_dims, F32Attr:$theta,
                       Kiln_RopeStyle:$style, OptionalAttr<DenseF32ArrayAttr>:$freq_factors);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = [{
    $input `,` $positions `head_dim` $head_dim `rotary_dims` $rotary_dims `theta` $theta
    `style` $style (`freq_factors` $freq_factors^)? attr-dict `:` type($input) `,`
    type($positions)
  }];
  let hasVerifier = 1;
}

def Kiln_AttentionOp : Kiln_Op<"attention", [
    MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["k", "v"]>]> {
  let summary = "causal grouped-query attention over a per-layer KV cache";
  let description = [{
    Appends `k` and `v` of each token to the KV cache slot `layer` at `positions[t]`, then
    for every query head `h` of token `t` computes softmax(scale * q_h . K_g^T) V_g over
    cache positions `0..positions[t]`, where `g` is the KV head of `h`: `h / (num_heads /
    num_kv_heads)` by default, or `kv_head_map[h]` when given (for pruned, uneven groups).
    Writes the cache, so it has memory effects and is never reordered or removed.

    With the `rope` group (`rope_rotary_dims`, `rope_theta`, `rope_style`, all three or
    none, and `rope_freq_factors` when the rope had them; made by
    kiln-fuse-rope-into-attention) q and k arrive unrotated and the op rotates them itself
    as kiln.rope would, k before it is stored in the cache.

    ```mlir
    %o = kiln.attention %q, %k, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8
        scale 0.353553385 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32>
        -> tensor<?x64xf32>
    %f = kiln.attention %q, %k, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8
        scale 0.353553385 rope rotary_dims 8 theta 1.0e+04 style adjacent
        : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$q, Kiln_Activations:$k, Kiln_Activations:$v,
                       Kiln_TokenIds:$positions, I32Attr:$layer, I32Attr:$num_heads,
                       I32Attr:$num_kv_heads, I32Attr:$head_dim, F32Attr:$scale,
                       OptionalAttr<DenseI32ArrayAttr>:$kv_head_map,
                       OptionalAttr<I32Attr>:$rope_rotary_dims,
                       OptionalAttr<F32Attr>:$rope_theta,
                       OptionalAttr<Kiln_RopeStyle>:$rope_style,
                       OptionalAttr<DenseF32ArrayAttr>:$rope_freq_factors);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $positions `layer` $layer `heads` $num_heads
    `kv_heads` $num_kv_heads `head_dim` $head_dim `scale` $scale
    (`kv_head_map` $kv_head_map^)?
    (`rope` `rotary_dims` $rope_rotary_dims^ `theta` $rope_theta `style` $rope_style)?
    (`freq_factors` $rope_freq_factors^)?
    attr-dict
    `:` type($q) `,` type($k) `,` type($positions) `->` type($result)
  }];
  // Without rope attrs, as the model builders emit it (fusion adds them later).
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$q, "::mlir::Value":$k,
                   "::mlir::Value":$v, "::mlir::Value":$positions,
                   "::mlir::IntegerAttr":$layer, "::mlir::IntegerAttr":$num_heads,
                   "::mlir::IntegerAttr":$num_kv_heads, "::mlir::IntegerAttr":$head_dim,
                   "::mlir::FloatAttr":$scale, "::mlir::DenseI32ArrayAttr":$kv_head_map), [{
      build($_builder, $_state, result, q, k, v, positions, layer, num_heads, num_kv_heads,
            head_dim, scale, kv_head_map, nullptr, nullptr, nullptr, nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

def Kiln_SiluOp : Kiln_Op<"silu", [Pure, SameOperandsAndResultType]> {
  let summary = "x * sigmoid(x)";
  let description = [{
    ```mlir
    %s = kiln.silu %g : tensor<?x172xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$input);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_MulOp : Kiln_Op<"mul", [Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise product";
  let description = [{
    ```mlir
    %p = kiln.mul %a, %b : tensor<?x172xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$lhs, Kiln_Activations:$rhs);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_AddOp : Kiln_Op<"add", [Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise sum (residual connections)";
  let description = [{
    ```mlir
    %r = kiln.add %x, %o : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$lhs, Kiln_Activations:$rhs);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_LogitsOp : Kiln_Op<"logits", [Pure, DeclareOpInterfaceMethods<Kiln_WeightReaderOpInterface>]> {
  let summary = "final projection of hidden states to vocabulary logits";
  let description = [{
    A linear with the `[vocab, dim]` output (or tied embedding) weight, kept as its own op
    so passes can treat the classifier apart (e.g. compute it for the last token only).

    ```mlir
    %l = kiln.logits %h weight "output.weight" format f32
        : tensor<?x64xf32> -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$input, StrAttr:$weight,
                       Kiln_StorageFormat:$format);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = [{
    $input `weight` $weight `format` $format attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_RmsNormalizeOp : Kiln_Op<"rms_normalize", [Pure, SameOperandsAndResultType]> {
  let summary = "RMS normalisation without a scale (the scale folded into the linears)";
  let description = [{
    `y = x / sqrt(mean(x^2) + eps)`, per token: `kiln.rms_norm` once
    `kiln-fold-norm-into-linear` has moved its weight into the columns of every consumer.

    ```mlir
    %y = kiln.rms_normalize %x eps 1.0e-05 : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$input, F32Attr:$eps);
  let results = (outs Kiln_Activations:$result);
  let assemblyFormat = "$input `eps` $eps attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_FusedLinearOp : Kiln_Op<"fused_linear", [Pure, DeclareOpInterfaceMethods<Kiln_WeightReaderOpInterface>]> {
  let summary = "one pass over x with a stacked weight: output segments and an epilogue";
  let description = [{
    `z = x W^T` with `W` the stored `[rows, in]` weight, then:
    - without `swiglu` or `residual`: result `k` is columns `[o_k, o_k + f_k)` of `z`, the
      results laid side by side in order (`o_0 = 0`, `f_k` = result `k`'s features; `rows`
      = the sum). One result per fused projection (q, k, v).
    - `residual %r`: one result, `z + r` (`r` has the result's type).
    - `swiglu`: one result of `F = rows / 2` features, rows interleaved gate/up:
      `y[t, j] = silu(z[t, 2j]) * z[t, 2j + 1]`.

    ```mlir
    %q, %k, %v = kiln.fused_linear %x weight "blk.0.attn_qkv.fused" format f32
        : (tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
    %h = kiln.fused_linear %a residual %x weight "blk.0.attn_output.weight" format f32
        : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
    %g = kiln.fused_linear %n weight "blk.0.ffn_gate_up.fused" format f32 swiglu
        : (tensor<?x64xf32>) -> tensor<?x172xf32>
    ```
  }];
  let arguments = (ins Kiln_Activations:$input, Optional<Kiln_Activations>:$residual,
                       StrAttr:$weight, Kiln_StorageFormat:$format, UnitAttr:$swiglu);
  let results = (outs Variadic<Kiln_Activations>:$results);
  let assemblyFormat = [{
    $input (`residual` $residual^)? `weight` $weight `format` $format (`swiglu` $swiglu^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// The lowered form's one op: the CPU lowering (kiln-lower-to-ukernels) turns each kiln op
// into calls of this, and kiln-convert-ukernel-calls into llvm.call of the kernel declared
// from its C prototype, checking the operands against it.
def Kiln_UkernelCallOp : Kiln_Op<"ukernel_call"> {
  let summary = "a call of a micro-kernel of codegen/common/ukernel_abi.h, by name";
  let description = [{
    ```mlir
    kiln.ukernel_call @kiln_uk_silu(%x, %count, %y) : (!llvm.ptr, i64, !llvm.ptr) -> ()
    %bad = kiln.ukernel_call @kiln_uk_check_inputs(%t, %p, %n, %v, %c, %b)
        : (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args);
  let results = (outs Optional<AnyType>:$result);
  let assemblyFormat = "$callee `(` $args `)` attr-dict `:` functional-type($args, results)";
}

#endif // KILN_OPS_TD
