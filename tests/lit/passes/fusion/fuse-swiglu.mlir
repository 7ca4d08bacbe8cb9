// RUN: kiln-opt --kiln-fuse-swiglu %s | FileCheck %s

// CHECK: kiln.derived_weights = {
// CHECK-SAME: "interleaved_rows(gate,up)" = {op = "interleave_rows", sources = ["gate", "up"]}
// CHECK-LABEL: func.func @swiglu
func.func @swiglu(%x: tensor<?x64xf32>) -> tensor<?x172xf32> {
  // CHECK: %[[F:.*]] = kiln.fused_linear %{{.*}} weight "interleaved_rows(gate,up)" format q8_0 swiglu : (tensor<?x64xf32>) -> tensor<?x172xf32>
  // CHECK-NOT: kiln.silu
  // CHECK-NOT: kiln.mul
  // CHECK: return %[[F]]
  %g = kiln.linear %x weight "gate" format q8_0 : tensor<?x64xf32> -> tensor<?x172xf32>
  %s = kiln.silu %g : tensor<?x172xf32>
  %u = kiln.linear %x weight "up" format q8_0 : tensor<?x64xf32> -> tensor<?x172xf32>
  %m = kiln.mul %u, %s : tensor<?x172xf32>
  return %m : tensor<?x172xf32>
}

// Negative: the gate's activation is also returned.
// CHECK-LABEL: func.func @gate_used
// CHECK: kiln.silu
// CHECK: kiln.mul
// CHECK-NOT: kiln.fused_linear
func.func @gate_used(%x: tensor<?x64xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %g = kiln.linear %x weight "gate" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %s = kiln.silu %g : tensor<?x172xf32>
  %u = kiln.linear %x weight "up" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %m = kiln.mul %s, %u : tensor<?x172xf32>
  return %m, %g : tensor<?x172xf32>, tensor<?x172xf32>
}

// Negative: gate and up read different inputs.
// CHECK-LABEL: func.func @different_inputs
// CHECK: kiln.mul
// CHECK-NOT: kiln.fused_linear
func.func @different_inputs(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x172xf32> {
  %g = kiln.linear %x weight "gate" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %s = kiln.silu %g : tensor<?x172xf32>
  %u = kiln.linear %y weight "up" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %m = kiln.mul %s, %u : tensor<?x172xf32>
  return %m : tensor<?x172xf32>
}

// Negative: mismatched formats.
// CHECK-LABEL: func.func @formats
// CHECK: kiln.mul
// CHECK-NOT: kiln.fused_linear
func.func @formats(%x: tensor<?x64xf32>) -> tensor<?x172xf32> {
  %g = kiln.linear %x weight "gate" format q8_0 : tensor<?x64xf32> -> tensor<?x172xf32>
  %s = kiln.silu %g : tensor<?x172xf32>
  %u = kiln.linear %x weight "up" format q4_0 : tensor<?x64xf32> -> tensor<?x172xf32>
  %m = kiln.mul %s, %u : tensor<?x172xf32>
  return %m : tensor<?x172xf32>
}

// Negative: a bias on the up projection.
// CHECK-LABEL: func.func @bias
// CHECK: kiln.mul
// CHECK-NOT: kiln.fused_linear
func.func @bias(%x: tensor<?x64xf32>) -> tensor<?x172xf32> {
  %g = kiln.linear %x weight "gate" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %s = kiln.silu %g : tensor<?x172xf32>
  %u = kiln.linear %x weight "up" bias "ub" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %m = kiln.mul %s, %u : tensor<?x172xf32>
  return %m : tensor<?x172xf32>
}
