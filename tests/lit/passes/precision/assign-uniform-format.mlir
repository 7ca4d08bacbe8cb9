// RUN: kiln-opt --kiln-assign-uniform-format=format=q8_0 --split-input-file --verify-diagnostics %s | FileCheck %s
// RUN: kiln-opt --kiln-assign-uniform-format=format=f16 %s --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=F16
// RUN: kiln-opt --kiln-assign-uniform-format=format=q4_0 %s --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=Q40
// RUN: kiln-opt --kiln-assign-uniform-format=format=q4_1 %s --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=Q41

// Every matrix read (embed, linear, logits) gets the format; rms_norm has none.
// CHECK-LABEL: func.func @forward
// F16-LABEL: func.func @forward
// Q40-LABEL: func.func @forward
// Q41-LABEL: func.func @forward
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  // CHECK: kiln.embed %{{.*}} format q8_0
  // F16: kiln.embed %{{.*}} format f16
  // Q40: kiln.embed %{{.*}} format q4_0
  // Q41: kiln.embed %{{.*}} format q4_1
  %x = kiln.embed %tokens weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: kiln.rms_norm %{{.*}} weight "n" eps
  %h = kiln.rms_norm %x weight "n" eps 1.0e-05 : tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "w" format q8_0
  // F16: kiln.linear %{{.*}} weight "w" format f16
  // Q40: kiln.linear %{{.*}} weight "w" format q4_0
  // Q41: kiln.linear %{{.*}} weight "w" format q4_1
  %y = kiln.linear %h weight "w" format bf16 : tensor<?x64xf32> -> tensor<?x172xf32>
  // CHECK: kiln.linear %{{.*}} weight "d" format q8_0 : tensor<?x172xf32>
  // The 172-wide rows are padded to 6 blocks later (weight layout), never refused.
  // Q40: kiln.linear %{{.*}} weight "d" format q4_0 : tensor<?x172xf32>
  // Q41: kiln.linear %{{.*}} weight "d" format q4_1 : tensor<?x172xf32>
  %z = kiln.linear %y weight "d" format f32 : tensor<?x172xf32> -> tensor<?x64xf32>
  // CHECK: kiln.logits %{{.*}} format q8_0
  // Q40: kiln.logits %{{.*}} format q4_0
  // Q41: kiln.logits %{{.*}} format q4_1
  %l = kiln.logits %z weight "token_embd.weight" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
