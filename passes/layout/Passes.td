//===- Passes.td - weight layout passes ----------------------*- tablegen -*-===//
#ifndef KILN_PASSES_LAYOUT_PASSES_TD
#define KILN_PASSES_LAYOUT_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnAssignLayout : Pass<"kiln-assign-layout", "mlir::ModuleOp"> {
  let summary = "choose how each linear's weight matrix is stored";
  let description = [{
    Sets `kiln.layout` on every linear and logits op; the weight layout
    (codegen/common/WeightLayout.cpp) stores the matrix that way and the lowering calls
    the matching kernel:
    - `r16`: q4_0/q4_1/q8_0 matrices repacked in 16-row groups for integer dot products
      (kiln/quant_packed.h), rows padded to whole 32-blocks and to a multiple of 16; the
      x86 and NEON kernels' groups;
    - `r32`: the same in 32-row groups, one row per 32-bit lane of a 128-byte HVX vector
      (`kiln compile` picks r16 or r32 from the target: HostTarget::packRows);
    - `rows64`: the format's plain rows, each padded to whole blocks and to a multiple of
      `row-align` bytes (`kiln.row_align`: the target's cache line, 64 bytes on every CPU
      kiln targets, or its vector, 128 bytes for Hexagon HVX);
    - q4_K, q5_K and q6_K rows of whole 256-element super-blocks take `r16` with any
      option but rows64 (they have no r32 form: HVX runs the portable integer code on them);
    - `block` (q3_0, and K-quants otherwise): plain rows padded to whole blocks only.
      q3_0's 14-byte blocks would make 64-byte rows cost up to twice the weights (a 64-wide
      row: 28 bytes in 64), and a q6_K row of 2048 (1,680 bytes) would grow past the
      file's bytes.
    A weight also read by an embed (a tied classifier) gets no attribute and a remark:
    it keeps the embedding's rows (ggml rows padded to the block), as it is stored once. Runs after the precision passes (it reads
    `format`). `--layout none` on `kiln compile` skips the pass: rows are padded to the
    block only, as before it existed.
  }];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"r16\"",
           "r16 or r32 (repack block formats in 16- or 32-row groups) or rows64 (plain "
           "rows, aligned strides)">,
    Option<"rowAlign", "row-align", "unsigned", /*default=*/"64",
           "plain rows' stride alignment in bytes (a power of two, 64..4096), from the "
           "target (cache line or vector width)">,
  ];
  let statistics = [
    Statistic<"numPacked", "packed", "linear ops given the r16 or r32 layout">,
    Statistic<"numRows", "rows64", "linear ops given 64-byte aligned plain rows">,
    Statistic<"numBlock", "block", "q3_0 and K-quant linear ops given rows of whole blocks">,
  ];
}

def KilnSizePrefillPanels : Pass<"kiln-size-prefill-panels", "mlir::ModuleOp"> {
  let summary = "split long prefills into token panels that fit the core's cache";
  let description = [{
    Sets `kiln.token_panel` (tokens) on every linear, fused linear and logits op whose
    activations for `max-batch` tokens would not fit in half of `cache-kib` (the target's
    per-core L2, from the chip profile). The prefill kernels read a token's activations once
    per 16-row group, so a panel larger than the cache would stream from the next memory
    level on every group; the lowering instead calls the kernel once per panel, reading the
    weights once per panel. Results are unchanged (activations are quantised per token).
    A token's activations are `kiln_packed_act_stride(in)` bytes for r16 ops (int8 codes
    and block scales) and 4 * in otherwise; panels are whole 8-token tiles, at least one.
    Runs after kiln-assign-layout (it reads `kiln.layout`).
  }];
  let options = [
    Option<"cacheKib", "cache-kib", "unsigned", /*default=*/"1024",
           "the core's cache the panel must fit, KiB (16..1048576)">,
    Option<"maxBatch", "max-batch", "unsigned", /*default=*/"0",
           "most tokens per forward call; ops whose whole call fits get no panel (0: unknown)">,
  ];
  let statistics = [
    Statistic<"numPanelled", "panelled", "linear ops split into token panels">,
  ];
}

def KilnSizeWeightShards : Pass<"kiln-size-weight-shards", "mlir::ModuleOp"> {
  let summary = "split packed weight matrices into shards that fit the DSP's L2, for prefetch";
  let description = [{
    Sets `kiln.shard_groups` (row groups per shard) on every linear, fused linear and logits
    op with the r16 or r32 layout: a quarter of `cache-kib` (the target's L2, from the chip
    profile) in whole groups of `kiln_packed_group_bytes(format, in)` bytes, at least one
    group and at most the matrix. A quarter: the shard being read and the next one, which
    the kernel prefetches as it starts each shard, take half; the other half is left to the
    activations, the outputs and the rest of the step. When all packed matrices together
    fit in half the cache they stay there between tokens and no op gets a shard. Only
    targets without a stream prefetcher the kernels can rely on run it (Hexagon HVX, whose
    kernels issue l2fetch); results are unchanged. Runs after kiln-assign-layout (it reads
    `kiln.layout`).
  }];
  let options = [
    Option<"cacheKib", "cache-kib", "unsigned", /*default=*/"512",
           "the L2 the shards are sized to, KiB (64..1048576)">,
  ];
  let statistics = [
    Statistic<"numSharded", "sharded", "linear ops given a shard size">,
    Statistic<"numShards", "shards", "shards in all sharded ops (one decode step's prefetches)">,
  ];
}

#endif // KILN_PASSES_LAYOUT_PASSES_TD
