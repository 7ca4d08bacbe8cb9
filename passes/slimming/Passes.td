//===- Passes.td - slimming passes: context, layer and head pruning -*- tablegen -*-===//
#ifndef KILN_PASSES_SLIMMING_PASSES_TD
#define KILN_PASSES_SLIMMING_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnPruneContext : Pass<"kiln-prune-context", "mlir::ModuleOp"> {
  let summary = "cap the context: KV cache, RoPE tables and memory plan hold max-ctx positions";
  let description = [{
    Records `max-ctx` as the module attribute `kiln.max_ctx`. `kiln compile` sizes the KV
    cache, the RoPE tables and the memory plan from it, and the runtime refuses any position
    at or past it. The pass reports, against the model's declared `kiln.context_length`, the
    KV-cache bytes of one sequence (fp32 K and V of every attention op, as the CPU code
    generator stores them) and the RoPE table bytes (cos + sin per distinct theta/rotary
    dims), as a remark and in `kiln.pass_effects`. A cap above the declared context is
    allowed (some GGUF files declare less than the model was trained on) with a warning;
    the savings are then negative.

    ```mlir
    // kiln-opt --pass-pipeline='builtin.module(kiln-prune-context{max-ctx=256})'
    module attributes {kiln.context_length = 2048 : i32, kiln.max_ctx = 256 : i32, ...}
    ```
  }];
  let options = [
    Option<"maxCtx", "max-ctx", "uint32_t", /*default=*/"0",
           "positions to keep (required, at least 1)">,
  ];
  let statistics = [
    Statistic<"numKvBytesSaved", "kv-bytes-saved", "KV-cache bytes per sequence saved">,
  ];
}

def KilnPruneLayers : Pass<"kiln-prune-layers", "mlir::ModuleOp"> {
  let summary = "remove whole decoder layers";
  let description = [{
    Removes every op tagged `kiln.layer = l` for each listed `l` (its KV cache goes with its
    attention op) and replaces the layer's output with its input residual stream, so the
    next layer (or the final norm) reads what the removed layer read. A layer must have
    exactly one activation input from outside it and one result used outside it (the
    residual stream), as the llama builder emits. Asking for a layer that does not exist,
    for the same layer twice, or for every layer is an error. Effects (parameters and KV
    bytes per token removed) go to a remark and `kiln.pass_effects`; the removed layers
    accumulate in `kiln.pruned_layers`.

    ```mlir
    // kiln-opt --pass-pipeline='builtin.module(kiln-prune-layers{layers=1,3})'
    ```
  }];
  let options = [
    ListOption<"layers", "layers", "int32_t", "decoder layers to remove">,
  ];
  let statistics = [
    Statistic<"numOpsRemoved", "ops-removed", "ops removed with their layers">,
  ];
}

def KilnPruneHeads : Pass<"kiln-prune-heads", "mlir::ModuleOp"> {
  let summary = "remove attention query heads (and KV heads left without a query head)";
  let description = [{
    `heads` lists, per decoder layer, the query heads to remove: `"0:1,5;3:2"` removes
    heads 1 and 5 of layer 0 and head 2 of layer 3 (indices of the attention op as it is).
    The kept rows of wq and columns of wo become derived weights (`kiln.derived_weights`,
    select_rows / select_cols of the stored tensors). GQA-aware: when every query head
    reading a KV head is gone, that KV head's rows of wk and wv go too and the KV cache
    shrinks. The q/k/v projections, their ropes, the attention op (num_heads,
    num_kv_heads, and `kv_head_map` whenever the groups are no longer even) and the
    output projection are rewritten consistently. Removing a head that does not exist,
    every head of a layer, or naming a layer twice is an error.

    ```mlir
    // kiln-opt --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:1,5;3:2})'
    ```
  }];
  let options = [
    Option<"heads", "heads", "std::string", /*default=*/"\"\"",
           "layer:head,head;layer:head ... (query heads to remove)">,
  ];
  let statistics = [
    Statistic<"numHeadsRemoved", "heads-removed", "query heads removed">,
    Statistic<"numKvHeadsRemoved", "kv-heads-removed", "KV heads removed">,
  ];
}

#endif // KILN_PASSES_SLIMMING_PASSES_TD
