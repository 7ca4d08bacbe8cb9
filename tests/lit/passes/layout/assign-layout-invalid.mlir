// RUN: not kiln-opt --kiln-assign-layout=layout=r8 %s 2>&1 | FileCheck %s
// RUN: not kiln-opt --kiln-assign-layout=row-align=96 %s 2>&1 | FileCheck %s --check-prefix=ALIGN

// An unknown layout is refused, not silently ignored.
// CHECK: kiln-assign-layout: unknown layout 'r8' (expected r16, r32 or rows64)
// ALIGN: kiln-assign-layout: row-align 96 is not a power of two in 64..4096
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = kiln.linear %x weight "w" format q4_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
