// RUN: kiln-opt --kiln-fuse-qkv %s | FileCheck %s

// q, k, v of one input: one op over the stacked rows, one result each.
// CHECK: kiln.derived_weights = {
// CHECK-SAME: "fused_rows(q,k,v)" = {op = "concat_rows", sources = ["q", "k", "v"]}
// CHECK-LABEL: func.func @qkv
func.func @qkv(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  // CHECK: %[[R:.*]]:3 = kiln.fused_linear %{{.*}} weight "fused_rows(q,k,v)" format f16 {kiln.layer = 3 : i32} : (tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
  // CHECK-NOT: kiln.linear
  // CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
  %q = kiln.linear %x weight "q" format f16 {kiln.layer = 3 : i32} : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %x weight "k" format f16 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %x weight "v" format f16 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %q, %k, %v : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// Negative: different inputs.
// CHECK-LABEL: func.func @different_inputs
// CHECK-COUNT-2: kiln.linear
// CHECK-NOT: kiln.fused_linear
func.func @different_inputs(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %a = kiln.linear %x weight "a" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %b = kiln.linear %y weight "b" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}

// Mismatched formats: only the two q8_0 linears are stacked; the f16 one stays.
// CHECK-LABEL: func.func @mixed_formats
// CHECK: kiln.fused_linear %{{.*}} weight "fused_rows(mq,mv)" format q8_0
// CHECK: kiln.linear %{{.*}} weight "mk" format f16
func.func @mixed_formats(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %q = kiln.linear %x weight "mq" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %x weight "mk" format f16 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %x weight "mv" format q8_0 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %q, %k, %v : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// Negative: a bias (compensation) keeps its linear out of the stack; alone, the other stays.
// CHECK-LABEL: func.func @bias
// CHECK: kiln.linear %{{.*}} weight "bq" bias "bb"
// CHECK: kiln.linear %{{.*}} weight "bk"
// CHECK-NOT: kiln.fused_linear
func.func @bias(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>) {
  %q = kiln.linear %x weight "bq" bias "bb" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %x weight "bk" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %q, %k : tensor<?x64xf32>, tensor<?x32xf32>
}
