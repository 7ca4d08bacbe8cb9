// RUN: kiln-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-layers{layers=1})' | FileCheck %s
// RUN: kiln-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-layers{layers=0})' 2>/dev/null \
// RUN:   | FileCheck %s --check-prefix=FIRST

// Removing the last layer: its ops go (attention and KV cache included) and the final
// norm reads layer 0's output, the residual stream that entered layer 1.
// CHECK-LABEL: module @two_layers
// CHECK-SAME: kiln.pass_effects = {"kiln-prune-layers" = "layers_removed=1,layers_left=1,params_removed=1952,kv_bytes_per_token_saved=64"}
// CHECK-SAME: kiln.pruned_layers = array<i32: 1>
// CHECK: %[[EMB:[0-9]+]] = kiln.embed
// CHECK: kiln.attention {{.*}} layer 0
// CHECK: kiln.linear %{{.*}} weight "blk.0.ffn_down.weight"
// CHECK-NEXT: %[[OUT0:[0-9]+]] = kiln.add
// CHECK-NOT: kiln.layer = 1
// CHECK: kiln.rms_norm %[[OUT0]] weight "output_norm.weight"
// Removing the first layer: layer 1 now reads the embedding.
// FIRST-LABEL: module @two_layers
// FIRST: %[[EMB:[0-9]+]] = kiln.embed
// FIRST-NOT: kiln.layer = 0
// FIRST: kiln.rms_norm %[[EMB]] weight "blk.1.attn_norm.weight"
// FIRST: kiln.attention {{.*}} layer 1
// expected-remark @below {{kiln-prune-layers: layers_removed=1,layers_left=1,params_removed=1952,kv_bytes_per_token_saved=64}}
module @two_layers attributes {kiln.context_length = 32 : i32} {
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
    %10 = kiln.rms_norm %9 weight "blk.0.ffn_norm.weight" eps 9.99999974E-6 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    %11 = kiln.linear %10 weight "blk.0.ffn_gate.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x24xf32>
    %12 = kiln.silu %11 {kiln.layer = 0 : i32} : tensor<?x24xf32>
    %13 = kiln.linear %10 weight "blk.0.ffn_up.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x24xf32>
    %14 = kiln.mul %12, %13 {kiln.layer = 0 : i32} : tensor<?x24xf32>
    %15 = kiln.linear %14 weight "blk.0.ffn_down.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x24xf32> -> tensor<?x16xf32>
    %16 = kiln.add %9, %15 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    %17 = kiln.rms_norm %16 weight "blk.1.attn_norm.weight" eps 9.99999974E-6 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %18 = kiln.linear %17 weight "blk.1.attn_q.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
    %19 = kiln.rope %18, %arg1 head_dim 4 rotary_dims 4 theta 1.000000e+04 style adjacent {kiln.layer = 1 : i32} : tensor<?x16xf32>, tensor<?xi32>
    %20 = kiln.linear %17 weight "blk.1.attn_k.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
    %21 = kiln.rope %20, %arg1 head_dim 4 rotary_dims 4 theta 1.000000e+04 style adjacent {kiln.layer = 1 : i32} : tensor<?x8xf32>, tensor<?xi32>
    %22 = kiln.linear %17 weight "blk.1.attn_v.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x8xf32>
    %23 = kiln.attention %19, %21, %22, %arg1 layer 1 heads 4 kv_heads 2 head_dim 4 scale 5.000000e-01 {kiln.layer = 1 : i32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %24 = kiln.linear %23 weight "blk.1.attn_output.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x16xf32>
    %25 = kiln.add %16, %24 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %26 = kiln.rms_norm %25 weight "blk.1.ffn_norm.weight" eps 9.99999974E-6 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %27 = kiln.linear %26 weight "blk.1.ffn_gate.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x24xf32>
    %28 = kiln.silu %27 {kiln.layer = 1 : i32} : tensor<?x24xf32>
    %29 = kiln.linear %26 weight "blk.1.ffn_up.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x16xf32> -> tensor<?x24xf32>
    %30 = kiln.mul %28, %29 {kiln.layer = 1 : i32} : tensor<?x24xf32>
    %31 = kiln.linear %30 weight "blk.1.ffn_down.weight" format f32 {kiln.layer = 1 : i32} : tensor<?x24xf32> -> tensor<?x16xf32>
    %32 = kiln.add %25, %31 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %33 = kiln.rms_norm %32 weight "output_norm.weight" eps 9.99999974E-6 : tensor<?x16xf32>
    %34 = kiln.logits %33 weight "output.weight" format f32 : tensor<?x16xf32> -> tensor<?x260xf32>
    return %34 : tensor<?x260xf32>
  }
}

// -----

// A layer without attention (an FFN block alone) is removed the same way, with no KV
// bytes; the other layer and the untagged ops (embedding, final norm, classifier) stay.
// CHECK-LABEL: module @ffn_only_layers
// CHECK-SAME: layers_removed=1,layers_left=1,params_removed=16,kv_bytes_per_token_saved=0
// CHECK: %[[E:[0-9]+]] = kiln.embed
// CHECK: kiln.silu
// CHECK-NOT: blk.1.norm
// CHECK: kiln.rms_norm %{{.*}} weight "output_norm.weight"
// CHECK: kiln.logits
// FIRST-LABEL: module @ffn_only_layers
// FIRST-SAME: layers_removed=0,layers_left=1,params_removed=1168,kv_bytes_per_token_saved=0
// FIRST: %[[E:[0-9]+]] = kiln.embed
// FIRST-NOT: kiln.silu
// FIRST: %[[N:[0-9]+]] = kiln.rms_norm %[[E]] weight "blk.1.norm.weight"
// FIRST: kiln.add %[[E]], %[[N]]
// expected-remark @below {{kiln-prune-layers: layers_removed=1,layers_left=1,params_removed=16,kv_bytes_per_token_saved=0}}
module @ffn_only_layers attributes {kiln.context_length = 32 : i32} {
  func.func @forward(%arg0: tensor<?xi32>, %arg1: tensor<?xi32>) -> tensor<?x260xf32> {
    %0 = kiln.embed %arg0 weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x16xf32>
    %1 = kiln.rms_norm %0 weight "blk.0.ffn_norm.weight" eps 9.99999974E-6 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    %2 = kiln.linear %1 weight "blk.0.ffn_gate.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x24xf32>
    %3 = kiln.silu %2 {kiln.layer = 0 : i32} : tensor<?x24xf32>
    %4 = kiln.linear %1 weight "blk.0.ffn_up.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x16xf32> -> tensor<?x24xf32>
    %5 = kiln.mul %3, %4 {kiln.layer = 0 : i32} : tensor<?x24xf32>
    %6 = kiln.linear %5 weight "blk.0.ffn_down.weight" format f32 {kiln.layer = 0 : i32} : tensor<?x24xf32> -> tensor<?x16xf32>
    %7 = kiln.add %0, %6 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    %8 = kiln.rms_norm %7 weight "blk.1.norm.weight" eps 9.99999974E-6 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %9 = kiln.add %7, %8 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %10 = kiln.rms_norm %9 weight "output_norm.weight" eps 9.99999974E-6 : tensor<?x16xf32>
    %11 = kiln.logits %10 weight "output.weight" format f32 : tensor<?x16xf32> -> tensor<?x260xf32>
    return %11 : tensor<?x260xf32>
  }
}
