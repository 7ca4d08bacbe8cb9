// RUN: not kiln-opt %s --split-input-file --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:4})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RANGE
// RUN: not kiln-opt %s --split-input-file --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:0,1,2,3})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=EMPTY
// RUN: not kiln-opt %s --split-input-file --pass-pipeline='builtin.module(kiln-prune-heads{heads=5:1})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOLAYER
// RUN: not kiln-opt %s --split-input-file --pass-pipeline='builtin.module(kiln-prune-heads{heads=0-1})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SYNTAX
// RUN: not kiln-opt %s --split-input-file --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:x})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HEAD
// RUN: not kiln-opt %s --split-input-file --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:1;0:2})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=LAYERTWICE
// RUN: not kiln-opt %s --split-input-file --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:1,1})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HEADTWICE
// RUN: kiln-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:1})'

// RANGE: error: kiln-prune-heads: layer 0 has 4 heads; head 4 does not exist
// EMPTY: error: kiln-prune-heads: removing 4 of the 4 heads would leave layer 0 with no heads
// NOLAYER: error: kiln-prune-heads: layer 5 does not exist or has no attention (layers with attention: 0)
// SYNTAX: error: kiln-prune-heads: '0-1' is not LAYER:HEAD[,HEAD...]
// HEAD: error: kiln-prune-heads: '0:x': 'x' is not a head index
// LAYERTWICE: error: kiln-prune-heads: layer 0 is listed twice
// HEADTWICE: error: kiln-prune-heads: layer 0: head 1 is listed twice

// The query projection must be a kiln.linear feeding only this attention (through its rope).
func.func @forward(%h: tensor<?x16xf32>, %pos: tensor<?xi32>) -> tensor<?x16xf32> {
  %q = kiln.linear %h weight "blk.0.attn_q.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
  %qr = kiln.rope %q, %pos head_dim 4 rotary_dims 4 theta 1.000000e+04 style adjacent {kiln.layer = 0 : i32} : tensor<?x16xf32>, tensor<?xi32>
  %k = kiln.linear %h weight "blk.0.attn_k.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
  %v = kiln.linear %h weight "blk.0.attn_v.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
  // expected-error @+1 {{kiln-prune-heads: layer 0: the rope of q has other users}}
  %a = kiln.attention %qr, %k, %v, %pos layer 0 heads 4 kv_heads 2 head_dim 4 scale 5.000000e-01 {kiln.layer = 0 : i32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %o = kiln.linear %a weight "blk.0.attn_output.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
  %s = kiln.add %o, %qr {kiln.layer = 0 : i32} : tensor<?x16xf32>
  return %s : tensor<?x16xf32>
}

// -----

// The attention result must feed exactly one projection (wo), whose columns are the heads.
func.func @forward(%h: tensor<?x16xf32>, %pos: tensor<?xi32>) -> tensor<?x16xf32> {
  %q = kiln.linear %h weight "blk.0.attn_q.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
  %k = kiln.linear %h weight "blk.0.attn_k.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
  %v = kiln.linear %h weight "blk.0.attn_v.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
  // expected-error @+1 {{kiln-prune-heads: layer 0: the attention result must feed one kiln.linear (wo)}}
  %a = kiln.attention %q, %k, %v, %pos layer 0 heads 4 kv_heads 2 head_dim 4 scale 5.000000e-01 {kiln.layer = 0 : i32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %s = kiln.add %a, %h {kiln.layer = 0 : i32} : tensor<?x16xf32>
  return %s : tensor<?x16xf32>
}

// -----

// K and V must come from their own projections (here v reuses k's).
func.func @forward(%h: tensor<?x16xf32>, %pos: tensor<?xi32>) -> tensor<?x16xf32> {
  %q = kiln.linear %h weight "blk.0.attn_q.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
  %k = kiln.linear %h weight "blk.0.attn_k.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
  // expected-error @+1 {{kiln-prune-heads: layer 0: k is not a kiln.linear used only by this attention}}
  %a = kiln.attention %q, %k, %k, %pos layer 0 heads 4 kv_heads 2 head_dim 4 scale 5.000000e-01 {kiln.layer = 0 : i32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %o = kiln.linear %a weight "blk.0.attn_output.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
  return %o : tensor<?x16xf32>
}
