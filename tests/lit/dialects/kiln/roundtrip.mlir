// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt --mlir-print-op-generic %s | kiln-opt | FileCheck %s

// One decoder layer as models/llama builds it, with every op of the dialect.
// CHECK-LABEL: func.func @layer
func.func @layer(%tokens: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x512xf32> {
  // CHECK: kiln.embed %{{.*}} weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %x = kiln.embed %tokens weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: kiln.rms_norm %{{.*}} weight "blk.0.attn_norm.weight" eps 9.99999974E-6 : tensor<?x64xf32>
  %h = kiln.rms_norm %x weight "blk.0.attn_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  // CHECK: kiln.rms_norm %{{.*}} weight "blk.0.ffn_norm.weight" eps 9.99999974E-6 format f16 : tensor<?x64xf32>
  %h16 = kiln.rms_norm %x weight "blk.0.ffn_norm.weight" eps 1.0e-05 format f16 : tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "blk.0.attn_q.weight" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  %q = kiln.linear %h weight "blk.0.attn_q.weight" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %h weight "blk.0.attn_k.weight" format q4_k : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %h weight "blk.0.attn_v.weight" format iq4_xs : tensor<?x64xf32> -> tensor<?x32xf32>
  // CHECK: kiln.rope %{{.*}}, %{{.*}} head_dim 8 rotary_dims 8 theta 1.000000e+04 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e+04 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  // CHECK: kiln.rope %{{.*}} style rotate_half
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 4 theta 5.0e+05 style rotate_half : tensor<?x32xf32>, tensor<?xi32>
  // Llama 3's rope_freqs: one divisor per rotated pair.
  // CHECK: kiln.rope %{{.*}} style adjacent freq_factors [1.000000e+00, 8.000000e+00] : tensor<?x32xf32>
  %kf = kiln.rope %k, %pos head_dim 8 rotary_dims 4 theta 5.0e+05 style adjacent freq_factors [1.0, 8.0] : tensor<?x32xf32>, tensor<?xi32>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %o = kiln.linear %a weight "blk.0.attn_output.weight" format f16 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<?x64xf32>
  %r = kiln.add %x, %o : tensor<?x64xf32>
  %g = kiln.linear %r weight "blk.0.ffn_gate.weight" format bf16 : tensor<?x64xf32> -> tensor<?x172xf32>
  %u = kiln.linear %r weight "blk.0.ffn_up.weight" format q6_k : tensor<?x64xf32> -> tensor<?x172xf32>
  // CHECK: kiln.silu %{{.*}} : tensor<?x172xf32>
  %s = kiln.silu %g : tensor<?x172xf32>
  // CHECK: kiln.mul %{{.*}}, %{{.*}} : tensor<?x172xf32>
  %m = kiln.mul %s, %u : tensor<?x172xf32>
  // A compensation bias (a 1-D [out_features] f32 weight) is optional.
  // CHECK: kiln.linear %{{.*}} weight "blk.0.ffn_down.weight" bias "blk.0.ffn_down.comp_bias" format f32 : tensor<?x172xf32> -> tensor<?x64xf32>
  %d = kiln.linear %m weight "blk.0.ffn_down.weight" bias "blk.0.ffn_down.comp_bias" format f32 : tensor<?x172xf32> -> tensor<?x64xf32>
  %y = kiln.add %r, %d : tensor<?x64xf32>
  // CHECK: kiln.logits %{{.*}} weight "output.weight" format q8_0 : tensor<?x64xf32> -> tensor<?x512xf32>
  %l = kiln.logits %y weight "output.weight" format q8_0 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}

// Uneven groups after head pruning carry an explicit query-head -> KV-head map.
// CHECK-LABEL: func.func @uneven_groups
func.func @uneven_groups(%q: tensor<?x24xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>, %pos: tensor<?xi32>) -> tensor<?x24xf32> {
  // CHECK: kiln.attention {{.*}} layer 1 heads 3 kv_heads 2 head_dim 8 scale 0.353553385 kv_head_map [0, 0, 1]
  %a = kiln.attention %q, %k, %v, %pos layer 1 heads 3 kv_heads 2 head_dim 8 scale 0.353553385 kv_head_map [0, 0, 1] : tensor<?x24xf32>, tensor<?x16xf32>, tensor<?xi32> -> tensor<?x24xf32>
  return %a : tensor<?x24xf32>
}

// kiln-fuse-rope-into-attention's result: the attention rotates q and k itself.
// CHECK-LABEL: func.func @fused_rope
func.func @fused_rope(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  // CHECK: kiln.attention {{.*}} layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 rope rotary_dims 6 theta 5.000000e+05 style rotate_half :
  %a = kiln.attention %q, %k, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 rope rotary_dims 6 theta 5.0e5 style rotate_half : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: kiln.attention {{.*}} rope rotary_dims 4 theta 5.000000e+05 style adjacent freq_factors [1.000000e+00, 3.500000e+00] :
  %f = kiln.attention %q, %k, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 rope rotary_dims 4 theta 5.0e5 style adjacent freq_factors [1.0, 3.5] : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// Static token counts are allowed (e.g. a decode step of exactly one token).
// CHECK-LABEL: func.func @static_tokens
func.func @static_tokens(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  // CHECK: kiln.silu %{{.*}} : tensor<1x64xf32>
  %s = kiln.silu %x : tensor<1x64xf32>
  return %s : tensor<1x64xf32>
}

// The fusion ops (passes/fusion): output segments, residual, SwiGLU, the unscaled norm.
// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<?x64xf32>, %r: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x172xf32>) {
  // CHECK: kiln.rms_normalize %{{.*}} eps 9.99999974E-6 : tensor<?x64xf32>
  %n = kiln.rms_normalize %x eps 1.0e-05 : tensor<?x64xf32>
  // CHECK: kiln.fused_linear %{{.*}} weight "qkv" format q8_0 : (tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
  %q, %k, %v = kiln.fused_linear %n weight "qkv" format q8_0 : (tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
  // CHECK: kiln.fused_linear %{{.*}} residual %{{.*}} weight "wo" format f32 : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %h = kiln.fused_linear %q residual %r weight "wo" format f32 : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  // CHECK: kiln.fused_linear %{{.*}} weight "gu" format f16 swiglu : (tensor<?x64xf32>) -> tensor<?x172xf32>
  %g = kiln.fused_linear %h weight "gu" format f16 swiglu : (tensor<?x64xf32>) -> tensor<?x172xf32>
  return %q, %k, %v, %h, %g : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x172xf32>
}
