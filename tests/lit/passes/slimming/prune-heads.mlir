// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:1})' 2>/dev/null \
// RUN:   | FileCheck %s --check-prefix=ONE
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:0,1;1:3})' \
// RUN:   2>/dev/null | FileCheck %s --check-prefix=GROUP
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-prune-heads{heads=0:1},kiln-prune-heads{heads=0:0})' \
// RUN:   2>/dev/null | FileCheck %s --check-prefix=TWICE
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-prune-heads)' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NONE

// Two layers of 4 query heads (head_dim 4) over 2 KV heads: heads 0,1 read KV head 0,
// heads 2,3 read KV head 1.

// One head: wq keeps the rows of heads 0, 2, 3 and wo their columns (derived weights);
// K/V are untouched because KV head 0 still has head 0; the groups are uneven now, so
// the attention op gets an explicit map. Layer 1 is untouched.
// ONE-LABEL: module @gqa
// ONE-SAME: kiln.derived_weights = {
// ONE-SAME: blk.0.attn_output.weight.pruned = {indices = array<i64: 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15>, op = "select_cols", source = "blk.0.attn_output.weight"}
// ONE-SAME: blk.0.attn_q.weight.pruned = {indices = array<i64: 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15>, op = "select_rows", source = "blk.0.attn_q.weight"}}
// ONE-SAME: "kiln-prune-heads" = "heads_removed=1,kv_heads_removed=0,removed=0:1,params_removed=128,kv_bytes_per_token_saved=0"
// ONE: %[[Q:[0-9]+]] = kiln.linear %{{.*}} weight "blk.0.attn_q.weight.pruned" format f32 {{.*}} -> tensor<?x12xf32>
// ONE: %[[QR:[0-9]+]] = kiln.rope %[[Q]], %{{.*}} : tensor<?x12xf32>
// ONE: kiln.linear %{{.*}} weight "blk.0.attn_k.weight" format f32 {{.*}} -> tensor<?x8xf32>
// ONE: kiln.linear %{{.*}} weight "blk.0.attn_v.weight" format f32 {{.*}} -> tensor<?x8xf32>
// ONE: %[[A:[0-9]+]] = kiln.attention %[[QR]], {{.*}} layer 0 heads 3 kv_heads 2 head_dim 4 scale 5.000000e-01 kv_head_map [0, 1, 1] {{.*}} : tensor<?x12xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x12xf32>
// ONE: kiln.linear %[[A]] weight "blk.0.attn_output.weight.pruned" format f32 {{.*}} : tensor<?x12xf32> -> tensor<?x16xf32>
// ONE: kiln.linear %{{.*}} weight "blk.1.attn_q.weight" format f32 {{.*}} -> tensor<?x16xf32>
// ONE: kiln.attention {{.*}} layer 1 heads 4 kv_heads 2 head_dim 4 scale 5.000000e-01 {kiln.layer = 1 : i32}

// A whole KV group: heads 0 and 1 of layer 0 leave KV head 0 without readers, so its rows
// of wk and wv go too (the KV cache shrinks to 4 features); 2 heads over 1 KV head are
// even again, so no map. Head 3 of layer 1 alone keeps both KV heads.
// GROUP-LABEL: module @gqa
// GROUP-SAME: blk.0.attn_k.weight.pruned = {indices = array<i64: 4, 5, 6, 7>, op = "select_rows", source = "blk.0.attn_k.weight"}
// GROUP-SAME: blk.0.attn_v.weight.pruned = {indices = array<i64: 4, 5, 6, 7>, op = "select_rows", source = "blk.0.attn_v.weight"}
// GROUP-SAME: "heads_removed=3,kv_heads_removed=1,removed=0:0+1;1:3,params_removed=512,kv_bytes_per_token_saved=32"
// GROUP: kiln.linear %{{.*}} weight "blk.0.attn_q.weight.pruned" {{.*}} -> tensor<?x8xf32>
// GROUP: %[[K:[0-9]+]] = kiln.linear %{{.*}} weight "blk.0.attn_k.weight.pruned" {{.*}} -> tensor<?x4xf32>
// GROUP: kiln.rope %[[K]], %{{.*}} : tensor<?x4xf32>
// GROUP: kiln.linear %{{.*}} weight "blk.0.attn_v.weight.pruned" {{.*}} -> tensor<?x4xf32>
// GROUP: kiln.attention {{.*}} layer 0 heads 2 kv_heads 1 head_dim 4 scale 5.000000e-01 {kiln.layer = 0 : i32} : tensor<?x8xf32>, tensor<?x4xf32>
// GROUP: kiln.linear %{{.*}} weight "blk.1.attn_k.weight" {{.*}} -> tensor<?x8xf32>
// GROUP: kiln.attention {{.*}} layer 1 heads 3 kv_heads 2 head_dim 4 scale 5.000000e-01 kv_head_map [0, 0, 1]

// Pruning a pruned layer composes the selections on the stored tensor (heads 0 and 1 of
// the original layer are gone in the end); the first pass's recipes no op uses are dropped.
// TWICE-LABEL: module @gqa
// TWICE-SAME: blk.0.attn_q.weight.pruned1 = {indices = array<i64: 8, 9, 10, 11, 12, 13, 14, 15>, op = "select_rows", source = "blk.0.attn_q.weight"}
// TWICE-NOT: blk.0.attn_q.weight.pruned =
// TWICE: kiln.linear %{{.*}} weight "blk.0.attn_q.weight.pruned1" {{.*}} -> tensor<?x8xf32>
// TWICE: kiln.linear %{{.*}} weight "blk.0.attn_k.weight.pruned" {{.*}} -> tensor<?x4xf32>
// TWICE: kiln.attention {{.*}} layer 0 heads 2 kv_heads 1 head_dim 4 scale 5.000000e-01 {kiln.layer = 0 : i32}

// Negative: nothing listed, nothing changes (the effects say so).
// NONE: remark: kiln-prune-heads: heads_removed=0,kv_heads_removed=0,removed=none,params_removed=0,kv_bytes_per_token_saved=0
// NONE-LABEL: module @gqa
// NONE-NOT: derived_weights
// NONE-NOT: .pruned
// NONE-NOT: kv_head_map
// NONE: kiln.attention {{.*}} layer 0 heads 4 kv_heads 2
// NONE: kiln.attention {{.*}} layer 1 heads 4 kv_heads 2
module @gqa attributes {kiln.context_length = 32 : i32} {
  func.func @forward(%arg0: tensor<?xi32>, %arg1: tensor<?xi32>) -> tensor<?x260xf32> {
    %0 = kiln.embed %arg0 weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x16xf32>
    %1 = kiln.rms_norm %0 weight "blk.0.attn_norm.weight" eps 9.99999974E-6 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    %2 = kiln.linear %1 weight "blk.0.attn_q.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
    %3 = kiln.rope %2, %arg1 head_dim 4 rotary_dims 4 theta 1.000000e+04 style adjacent {kiln.layer = 0 : i32} : tensor<?x16xf32>, tensor<?xi32>
    %4 = kiln.linear %1 weight "blk.0.attn_k.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
    %5 = kiln.rope %4, %arg1 head_dim 4 rotary_dims 4 theta 1.000000e+04 style adjacent {kiln.layer = 0 : i32} : tensor<?x8xf32>, tensor<?xi32>
    %6 = kiln.linear %1 weight "blk.0.attn_v.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
    %7 = kiln.attention %3, %5, %6, %arg1 layer 0 heads 4 kv_heads 2 head_dim 4 scale 5.000000e-01 {kiln.layer = 0 : i32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %8 = kiln.linear %7 weight "blk.0.attn_output.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
    %9 = kiln.add %0, %8 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    %10 = kiln.rms_norm %9 weight "blk.1.attn_norm.weight" eps 9.99999974E-6 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %11 = kiln.linear %10 weight "blk.1.attn_q.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
    %12 = kiln.rope %11, %arg1 head_dim 4 rotary_dims 4 theta 1.000000e+04 style adjacent {kiln.layer = 1 : i32} : tensor<?x16xf32>, tensor<?xi32>
    %13 = kiln.linear %10 weight "blk.1.attn_k.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
    %14 = kiln.rope %13, %arg1 head_dim 4 rotary_dims 4 theta 1.000000e+04 style adjacent {kiln.layer = 1 : i32} : tensor<?x8xf32>, tensor<?xi32>
    %15 = kiln.linear %10 weight "blk.1.attn_v.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
    %16 = kiln.attention %12, %14, %15, %arg1 layer 1 heads 4 kv_heads 2 head_dim 4 scale 5.000000e-01 {kiln.layer = 1 : i32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %17 = kiln.linear %16 weight "blk.1.attn_output.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
    %18 = kiln.add %9, %17 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %19 = kiln.rms_norm %18 weight "output_norm.weight" eps 9.99999974E-6 : tensor<?x16xf32>
    %20 = kiln.logits %19 weight "output.weight" format f32 : tensor<?x16xf32> -> tensor<?x260xf32>
    return %20 : tensor<?x260xf32>
  }
}
