// RUN: kiln-opt --kiln-fuse-residual-add %s | FileCheck %s

// CHECK-LABEL: func.func @residual
func.func @residual(%x: tensor<?x64xf32>, %a: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[F:.*]] = kiln.fused_linear %arg1 residual %arg0 weight "wo" format q8_0 : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  // CHECK-NOT: kiln.add
  // CHECK: return %[[F]]
  %o = kiln.linear %a weight "wo" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  %h = kiln.add %x, %o : tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}

// The linear on the left of the add.
// CHECK-LABEL: func.func @residual_left
// CHECK: kiln.fused_linear %arg1 residual %arg0 weight "wd"
func.func @residual_left(%x: tensor<?x64xf32>, %a: tensor<?x172xf32>) -> tensor<?x64xf32> {
  %o = kiln.linear %a weight "wd" format f32 : tensor<?x172xf32> -> tensor<?x64xf32>
  %h = kiln.add %o, %x : tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}

// Negative: a bias (slimming compensation) would be added after the residual.
// CHECK-LABEL: func.func @bias
// CHECK: kiln.linear %{{.*}} bias "b"
// CHECK: kiln.add
// CHECK-NOT: kiln.fused_linear
func.func @bias(%x: tensor<?x64xf32>, %a: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %o = kiln.linear %a weight "wo" bias "b" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %h = kiln.add %x, %o : tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}

// Negative: the projection itself is also needed.
// CHECK-LABEL: func.func @projection_used
// CHECK: kiln.add
// CHECK-NOT: kiln.fused_linear
func.func @projection_used(%x: tensor<?x64xf32>, %a: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %o = kiln.linear %a weight "wo" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %h = kiln.add %x, %o : tensor<?x64xf32>
  return %h, %o : tensor<?x64xf32>, tensor<?x64xf32>
}

// Negative: an add of two non-linears.
// CHECK-LABEL: func.func @no_linear
// CHECK: kiln.add
func.func @no_linear(%x: tensor<?x64xf32>, %a: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %s = kiln.silu %a : tensor<?x64xf32>
  %h = kiln.add %x, %s : tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}
