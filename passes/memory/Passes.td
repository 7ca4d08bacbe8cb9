//===- Passes.td - memory planning passes --------------------*- tablegen -*-===//
#ifndef KILN_PASSES_MEMORY_PASSES_TD
#define KILN_PASSES_MEMORY_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnPlanMemory : Pass<"kiln-plan-memory", "mlir::ModuleOp"> {
  let summary = "place every activation, kernel workspace and KV-cache plane at a fixed offset";
  let description = [{
    Decides the static memory of `@forward` for `max-batch` tokens per call and a context
    of `max-ctx` positions, so the runtime allocates two blocks once and nothing on the
    decode path:
    - scratch: each result's buffer (`kiln.buffers`, one offset per result) and each op's
      own workspace while it runs (`kiln.workspace`: int8 activations of r16/r32 linears,
      attention scores), placed first-fit by live range, largest first, 64-byte aligned.
      A rope result shares its input's buffer (it rotates in place), and a fused linear's
      residual buffer becomes its output when the op is the residual's last reader.
    - the KV cache: per attention op, K, int8 K scales (for `kv` k=int8) and V planes
      (`kiln.kv_slots`), 64-byte aligned, in the `kv` element types.
    The totals go on the module as `kiln.memory_plan` (max_ctx, max_batch, kv_k, kv_v,
    scratch_bytes, scratch_bytes_without_reuse, kv_bytes, kv_bytes_per_token). Runs after
    the layout passes (a packed linear's workspace depends on `kiln.layout`); the lowering
    to micro-kernel calls reads every offset from here.

    ```mlir
    %q = kiln.linear %x weight "q" format q4_0 {kiln.layout = "r16", kiln.buffers = array<i64: 512>, kiln.workspace = 0 : i64} : ...
    ```
  }];
  let options = [
    Option<"maxCtx", "max-ctx", "unsigned", /*default=*/"0",
           "positions the KV cache holds (> 0)">,
    Option<"maxBatch", "max-batch", "unsigned", /*default=*/"0",
           "most tokens per forward call (1..max-ctx)">,
    Option<"kv", "kv", "std::string", /*default=*/"\"f32\"",
           "KV cache element types: f32, f16 or k=<f32|f16|int8>,v=<f32|f16>">,
  ];
  let statistics = [
    Statistic<"scratchBytes", "scratch-bytes", "bytes of the scratch block">,
    Statistic<"kvBytes", "kv-bytes", "bytes of the KV cache">,
  ];
}

#endif // KILN_PASSES_MEMORY_PASSES_TD
