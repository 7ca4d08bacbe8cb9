// RUN: not kiln-opt --kiln-assign-uniform-format=format=q3_k %s 2>&1 | FileCheck %s
// RUN: not kiln-opt --kiln-assign-uniform-format=format=int3 %s 2>&1 | FileCheck %s --check-prefix=BOGUS

// Formats without a code generator yet are refused, not silently kept.
// CHECK: unsupported format 'q3_k' (expected f32, f16, q8_0, q6_k, q5_k, q4_k, q4_0, q4_1 or q3_0)
// BOGUS: unsupported format 'int3'
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = kiln.linear %x weight "w" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
