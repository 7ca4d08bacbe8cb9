// RUN: not kiln-opt --kiln-assign-layout=layout=r8 %s 2>&1 | FileCheck %s

// An unknown layout is refused, not silently ignored.
// CHECK: kiln-assign-layout: unknown layout 'r8' (expected r16 or rows64)
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = kiln.linear %x weight "w" format q4_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
