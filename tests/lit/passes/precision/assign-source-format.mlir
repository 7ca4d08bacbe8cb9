// RUN: kiln-opt --kiln-assign-source-format %s 2>&1 | FileCheck %s
// RUN: kiln-opt --kiln-assign-source-format=keep-kquants=true %s 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: kiln-opt --kiln-assign-source-format=keep-packed-kquants=true %s 2>&1 | FileCheck %s --check-prefix=PACKED

// Formats kiln stores stay (a Q4_0 file is repacked, not requantised); the others become
// the smallest 32-element block format with more bits per weight; norm scales keep f16 or
// f32. K-quants go to q4_1/q8_0 (integer-dot kernels), with a remark, unless keep-kquants;
// keep-packed-kquants (a target with q4_K_r16 / q5_K_r16 / q6_K_r16 kernels) keeps them.
// CHECK: remark: kiln-assign-source-format: requantised 1 q5_0 -> q8_0, 1 q5_1 -> q8_0, 1 q2_K -> q3_0, 1 q3_K -> q3_0, 1 q4_K -> q4_1, 1 q5_K -> q8_0, 1 q6_K -> q8_0, 1 iq4_nl -> q4_1, 1 iq4_xs -> q4_0 (K-quants the target has no integer-dot kernels for: into formats that have them; --precision lossless keeps them as the file stores them)
// PACKED: remark: kiln-assign-source-format: requantised 1 q5_0 -> q8_0, 1 q5_1 -> q8_0, 1 q2_K -> q3_0, 1 q3_K -> q3_0, 1 iq4_nl -> q4_1, 1 iq4_xs -> q4_0{{$}}
// KEEP: remark: kiln-assign-source-format: requantised 1 q5_0 -> q8_0, 1 q5_1 -> q8_0, 1 q2_K -> q3_0, 1 q3_K -> q3_0, 1 iq4_nl -> q4_1, 1 iq4_xs -> q4_0{{$}}
// CHECK-LABEL: func.func @forward
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  // CHECK: kiln.embed %{{.*}} weight "token_embd.weight" format q4_0
  %x = kiln.embed %tokens weight "token_embd.weight" format q4_0 : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: kiln.rms_norm %{{.*}} weight "n16" eps {{.*}} format f16
  %h = kiln.rms_norm %x weight "n16" eps 1.0e-05 format f16 : tensor<?x64xf32>
  // CHECK: kiln.rms_norm %{{.*}} weight "n32" eps {{[^ ]*}} :
  %g = kiln.rms_norm %h weight "n32" eps 1.0e-05 : tensor<?x64xf32>
  // CHECK: weight "keep.q8_0" format q8_0
  %a = kiln.linear %g weight "keep.q8_0" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: weight "keep.q4_1" format q4_1
  %b = kiln.linear %a weight "keep.q4_1" format q4_1 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: weight "keep.f16" format f16
  %c = kiln.linear %b weight "keep.f16" format f16 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: weight "keep.q3_0" format q3_0
  %d = kiln.linear %c weight "keep.q3_0" format q3_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  // 6.5625 bits -> 8.5; kept with keep-kquants
  // CHECK: weight "q6_k" format q8_0
  // KEEP: weight "q6_k" format q6_k
  // PACKED: weight "q6_k" format q6_k
  %e = kiln.linear %d weight "q6_k" format q6_k : tensor<?x64xf32> -> tensor<?x64xf32>
  // 5.5 and 6 bits -> 8.5
  // CHECK: weight "q5_0" format q8_0
  %f = kiln.linear %e weight "q5_0" format q5_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: weight "q5_1" format q8_0
  %i = kiln.linear %f weight "q5_1" format q5_1 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: weight "q5_k" format q8_0
  // KEEP: weight "q5_k" format q5_k
  // PACKED: weight "q5_k" format q5_k
  %j = kiln.linear %i weight "q5_k" format q5_k : tensor<?x64xf32> -> tensor<?x64xf32>
  // 4.5 bits: q4_0 has no more, q4_1 (5) does
  // CHECK: weight "q4_k" format q4_1
  // KEEP: weight "q4_k" format q4_k
  // PACKED: weight "q4_k" format q4_k
  %k = kiln.linear %j weight "q4_k" format q4_k : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: weight "iq4_nl" format q4_1
  // KEEP: weight "iq4_nl" format q4_1
  %m = kiln.linear %k weight "iq4_nl" format iq4_nl : tensor<?x64xf32> -> tensor<?x64xf32>
  // 4.25 bits -> 4.5
  // CHECK: weight "iq4_xs" format q4_0
  %n = kiln.linear %m weight "iq4_xs" format iq4_xs : tensor<?x64xf32> -> tensor<?x64xf32>
  // 3.4375 and 2.625 bits -> 3.5
  // CHECK: weight "q3_k" format q3_0
  %o = kiln.linear %n weight "q3_k" format q3_k : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: weight "q2_k" format q3_0
  %p = kiln.linear %o weight "q2_k" format q2_k : tensor<?x64xf32> -> tensor<?x64xf32>
  // bf16 into f16 would narrow the exponent: f32, lossless
  // CHECK: weight "bf16" format f32
  %q = kiln.linear %p weight "bf16" format bf16 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: kiln.logits %{{.*}} weight "token_embd.weight" format q4_0
  %l = kiln.logits %q weight "token_embd.weight" format q4_0 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
