// RUN: kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8" --kiln-lower-to-ukernels %s | FileCheck %s --check-prefix=CALLS
// RUN: kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8" --kiln-lower-to-ukernels --kiln-convert-ukernel-calls %s | FileCheck %s
// RUN: kiln-opt --kiln-size-prefill-panels="cache-kib=16 max-batch=64" --kiln-plan-memory="max-ctx=64 max-batch=64" --kiln-lower-to-ukernels --kiln-convert-ukernel-calls %s | FileCheck %s --check-prefix=PANEL

// The entry point checks its inputs and calls one kernel per op (kiln.ukernel_call); the
// tail after attention is emitted for the last row alone and for all rows. Then every
// kernel of ukernel_abi.h is declared from its C prototype and the calls become llvm.call.
module attributes {kiln.vocab_size = 32 : i32} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %n = kiln.rms_norm %x weight "n0" eps 1.0e-05 : tensor<?x64xf32>
  %q = kiln.linear %n weight "q" format q8_0 {kiln.layout = #kiln.layout<r16>} : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %n weight "k" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %n weight "v" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %a = kiln.attention %q, %k, %v, %pos layer 0 heads 4 kv_heads 2 head_dim 16 scale 0.25 rope rotary_dims 16 theta 1.0e+04 style adjacent : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %h = kiln.fused_linear %a residual %x weight "o" format f32 : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %l = kiln.logits %h weight "tok" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}
// CALLS-NOT: llvm.func @kiln_uk_
// CALLS-LABEL: llvm.func @kiln_model_forward(
// CALLS: kiln.ukernel_call @kiln_uk_check_inputs(%{{.*}}) : (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
// CALLS: kiln.ukernel_call @kiln_uk_embed(
// CALLS: kiln.ukernel_call @kiln_uk_rms_norm(
// CALLS: kiln.ukernel_call @kiln_uk_linear_packed(
// CALLS: kiln.ukernel_call @kiln_uk_attention(
// CALLS-NOT: llvm.call

// CHECK: llvm.func @kiln_uk_check_inputs(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
// CHECK: llvm.func @kiln_uk_embed(!llvm.ptr, i32, !llvm.ptr, i64, i32, !llvm.ptr, i32, !llvm.ptr)
// CHECK: llvm.func @kiln_uk_rms_norm(i32, !llvm.ptr, !llvm.ptr, i32, i32, f32, !llvm.ptr)
// CHECK: llvm.func @kiln_uk_attention(
// CHECK: llvm.func @kiln_uk_add_bias(
// CHECK-NOT: func.func
// CHECK-LABEL: llvm.func @kiln_model_forward(
// CHECK: llvm.call @kiln_uk_check_inputs
// CHECK: llvm.call @kiln_uk_embed
// CHECK: llvm.call @kiln_uk_rms_norm
// CHECK: llvm.call @kiln_uk_linear_packed
// CHECK: llvm.call @kiln_uk_linear(
// CHECK: llvm.call @kiln_uk_linear(
// CHECK: llvm.call @kiln_uk_attention
// CHECK: llvm.cond_br
// CHECK: llvm.call @kiln_uk_linear_fused
// CHECK: llvm.call @kiln_uk_linear(
// CHECK: llvm.return
// CHECK: llvm.call @kiln_uk_linear_fused
// CHECK: llvm.call @kiln_uk_linear(
// CHECK: llvm.return
// CHECK-NOT: kiln.

// With 16 KiB of cache, half of it holds 64 rows of 64 floats in panels of 8 tokens: the
// linears loop over panels.
// PANEL-LABEL: llvm.func @kiln_model_forward(
// PANEL: llvm.call @kiln_uk_linear_packed
// PANEL: llvm.br
