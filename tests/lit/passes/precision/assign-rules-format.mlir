// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=attn_qkv=q4_0,ffn=q8_0,norms=f16,default=q8_0})' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=attn_k=int4m,output=int8})' | FileCheck %s --check-prefix=DEF
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=default=f16})' | FileCheck %s --check-prefix=F16

// Classes from the weight names (blk.N.<class>.weight) and the op kinds. The tied table
// is read as embedding and output: only output is named, so both reads follow it.
// CHECK-LABEL: func.func @forward
// CHECK: kiln.embed %{{.*}} weight "token_embd.weight" format q8_0
// CHECK: kiln.rms_norm %{{.*}} weight "blk.0.attn_norm.weight" eps {{.*}} format f16
// CHECK: weight "blk.0.attn_q.weight" format q4_0
// CHECK: weight "blk.0.attn_k.weight" format q4_0
// CHECK: weight "blk.0.attn_v.weight" format q4_0
// CHECK: weight "blk.0.attn_output.weight" format q8_0
// CHECK: weight "blk.0.ffn_gate.weight" format q8_0
// CHECK: weight "blk.0.ffn_up.weight" format q8_0
// CHECK: weight "blk.0.ffn_down.weight" format q8_0
// CHECK: kiln.rms_norm %{{.*}} weight "output_norm.weight" eps {{.*}} format f16
// CHECK: kiln.logits %{{.*}} weight "token_embd.weight" format q8_0

// Default f32; a norm keeps no format attribute (f32); the tied table follows `output`.
// DEF: kiln.embed %{{.*}} weight "token_embd.weight" format q8_0
// DEF: kiln.rms_norm %{{.*}} weight "blk.0.attn_norm.weight" eps {{[^ ]*}} :
// DEF: weight "blk.0.attn_q.weight" format f32
// DEF: weight "blk.0.attn_k.weight" format q4_1
// DEF: weight "blk.0.attn_v.weight" format f32
// DEF: weight "blk.0.ffn_down.weight" format f32
// DEF: kiln.logits %{{.*}} weight "token_embd.weight" format q8_0

// default=f16 reaches the norms too (f16 is a norm format).
// F16: kiln.rms_norm %{{.*}} weight "blk.0.attn_norm.weight" eps {{.*}} format f16
// F16: weight "blk.0.ffn_down.weight" format f16
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tokens weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %h = kiln.rms_norm %x weight "blk.0.attn_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  %q = kiln.linear %h weight "blk.0.attn_q.weight" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %h weight "blk.0.attn_k.weight" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %h weight "blk.0.attn_v.weight" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %o = kiln.linear %q weight "blk.0.attn_output.weight" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %g = kiln.linear %o weight "blk.0.ffn_gate.weight" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %u = kiln.linear %o weight "blk.0.ffn_up.weight" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %m = kiln.mul %g, %u : tensor<?x172xf32>
  %d = kiln.linear %m weight "blk.0.ffn_down.weight" format f32 : tensor<?x172xf32> -> tensor<?x64xf32>
  %n = kiln.rms_norm %d weight "output_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  %l = kiln.logits %n weight "token_embd.weight" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
