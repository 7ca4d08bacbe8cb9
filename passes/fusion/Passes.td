//===- Passes.td - fusion passes ------------------------------*- tablegen -*-===//
#ifndef KILN_PASSES_FUSION_PASSES_TD
#define KILN_PASSES_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFuseRopeIntoAttention : Pass<"kiln-fuse-rope-into-attention", "mlir::ModuleOp"> {
  let summary = "fold the kiln.rope ops on q and k into the kiln.attention they feed";
  let description = [{
    When both q and k of a kiln.attention are kiln.rope results that nothing else uses,
    with the same rotary_dims, theta and style, head_dim equal to the attention's and the
    attention's positions, the two ropes are erased and the attention gets
    `rope rotary_dims R theta T style S`: it rotates q and k itself (k before it is stored
    in the KV cache), so the rotated q and k never round-trip through memory. Anything else
    is left as it is. Records `fused=N,skipped=M` in `kiln.pass_effects`.

    ```mlir
    // before
    %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e+04 style adjacent ...
    %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 8 theta 1.0e+04 style adjacent ...
    %o = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale ...
    // after
    %o = kiln.attention %q, %k, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale ...
        rope rotary_dims 8 theta 1.0e+04 style adjacent ...
    ```
  }];
  let statistics = [
    Statistic<"numFused", "num-fused", "attention ops that took over their q/k ropes">,
  ];
}

#endif // KILN_PASSES_FUSION_PASSES_TD
