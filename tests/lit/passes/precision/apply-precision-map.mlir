// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-apply-precision-map{map=blk.0.attn_q.weight=q4_0,n=f16,token_embd.weight=int8})' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-apply-precision-map{map=n=f16},kiln-apply-precision-map{map=n=f32})' | FileCheck %s --check-prefix=BACK
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-apply-precision-map{map=nope.weight=q8_0})' 2>&1 | FileCheck %s --check-prefix=UNUSED
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-apply-precision-map{map=n=q4_0})' 2>&1 | FileCheck %s --check-prefix=NORM
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-apply-precision-map{map=n=f8})' 2>&1 | FileCheck %s --check-prefix=FORMAT

// Named weights change, every read of them (the tied table twice); the rest keep theirs.
// CHECK: kiln.embed %{{.*}} weight "token_embd.weight" format q8_0
// CHECK: kiln.rms_norm %{{.*}} weight "n" eps {{.*}} format f16
// CHECK: weight "blk.0.attn_q.weight" format q4_0
// CHECK: weight "blk.0.attn_k.weight" format q4_1
// CHECK: kiln.logits %{{.*}} weight "token_embd.weight" format q8_0
// BACK: kiln.rms_norm %{{.*}} weight "n" eps {{[^ ]*}} :
// UNUSED: kiln-apply-precision-map: no op reads weight 'nope.weight'
// NORM: kiln-apply-precision-map: norm scale 'n' can be f32 or f16, not q4_0
// FORMAT: unknown format 'f8' for weight 'n'
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tokens weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %h = kiln.rms_norm %x weight "n" eps 1.0e-05 : tensor<?x64xf32>
  %q = kiln.linear %h weight "blk.0.attn_q.weight" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %q weight "blk.0.attn_k.weight" format q4_1 : tensor<?x64xf32> -> tensor<?x64xf32>
  %l = kiln.logits %k weight "token_embd.weight" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
