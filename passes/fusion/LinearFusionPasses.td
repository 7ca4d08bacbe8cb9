#ifndef KILN_PASSES_FUSION_LINEARFUSIONPASSES_TD
#define KILN_PASSES_FUSION_LINEARFUSIONPASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFoldNormIntoLinear : Pass<"kiln-fold-norm-into-linear", "::mlir::ModuleOp"> {
  let summary = "fold rms_norm's weight into the columns of the linears that read it";
  let description = [{
    When every user of a `kiln.rms_norm` is a `kiln.linear` or `kiln.logits`, each user's
    weight becomes the derived `W diag(g)` (recipe `scale_cols`) and the norm becomes a
    weightless `kiln.rms_normalize`. A norm with any other user is left alone.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numFolded", "folded", "rms_norm weights folded into linears">,
  ];
}

def KilnFuseQkv : Pass<"kiln-fuse-qkv", "::mlir::ModuleOp"> {
  let summary = "fuse linears that read the same input into one multi-result fused_linear";
  let description = [{
    Two or three `kiln.linear` ops with the same input, the same storage format and no bias
    (in llama: q, k and v) become one `kiln.fused_linear` over the derived weight that
    stacks their rows (recipe `concat_rows`), one result per linear. Linears in different
    formats or with a bias are left alone.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numFused", "fused", "groups of linears fused">,
  ];
}

def KilnFuseSwiGlu : Pass<"kiln-fuse-swiglu", "::mlir::ModuleOp"> {
  let summary = "fuse mul(silu(linear(x, gate)), linear(x, up)) into one fused_linear";
  let description = [{
    The gate and up projections of one input, the silu of the gate and the product become
    one `kiln.fused_linear ... swiglu` over the derived weight that interleaves gate and up
    rows (recipe `interleave_rows`). Needs: same format, no bias, and the gate, its silu and
    the up projection used only by this chain.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numFused", "fused", "SwiGLU blocks fused">,
  ];
}

def KilnFuseResidualAdd : Pass<"kiln-fuse-residual-add", "::mlir::ModuleOp"> {
  let summary = "fuse add(r, linear(x)) into a fused_linear with a residual";
  let description = [{
    `kiln.add` of a value and a `kiln.linear` that nothing else reads becomes
    `kiln.fused_linear %x residual %r`, which adds the residual as it stores. A linear
    with a bias (compensation) is left alone: the bias is added after the product, and
    fusing would change the order of the two additions.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
  let statistics = [
    Statistic<"numFused", "fused", "residual adds fused">,
  ];
}

#endif // KILN_PASSES_FUSION_LINEARFUSIONPASSES_TD
