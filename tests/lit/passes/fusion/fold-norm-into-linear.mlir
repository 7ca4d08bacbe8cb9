// RUN: kiln-opt --kiln-fold-norm-into-linear %s | FileCheck %s

// Every reader is a linear (or logits): the weights become W diag(g), the norm unscaled.
// CHECK: kiln.derived_weights = {
// CHECK-DAG: "q.fold(attn_norm)" = {by = "attn_norm", op = "scale_cols", source = "q"}
// CHECK-DAG: "k.fold(attn_norm)" = {by = "attn_norm", op = "scale_cols", source = "k"}
// CHECK-DAG: "out.fold(out_norm)" = {by = "out_norm", op = "scale_cols", source = "out"}
// CHECK-NOT: "down.fold
// CHECK-NOT: "wq.fold
// CHECK-LABEL: func.func @all_linear
func.func @all_linear(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x512xf32>) {
  // CHECK: %[[N:.*]] = kiln.rms_normalize %{{.*}} eps 9.99999974E-6 {kiln.layer = 0 : i32} : tensor<?x64xf32>
  // CHECK-NOT: kiln.rms_norm
  // CHECK: kiln.linear %[[N]] weight "q.fold(attn_norm)" format f16
  // CHECK: kiln.linear %[[N]] weight "k.fold(attn_norm)" bias "kb" format f32
  %n = kiln.rms_norm %x weight "attn_norm" eps 1.0e-05 {kiln.layer = 0 : i32} : tensor<?x64xf32>
  %q = kiln.linear %n weight "q" format f16 : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %n weight "k" bias "kb" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  // CHECK: kiln.logits %{{.*}} weight "out.fold(out_norm)"
  %o = kiln.rms_norm %x weight "out_norm" eps 1.0e-05 : tensor<?x64xf32>
  %l = kiln.logits %o weight "out" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %q, %k, %l : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x512xf32>
}

// Negative: the norm's value is also returned (a consumer needs the scaled value).
// CHECK-LABEL: func.func @other_reader
// CHECK: kiln.rms_norm %{{.*}} weight "ffn_norm"
// CHECK: kiln.linear %{{.*}} weight "down" format f32
func.func @other_reader(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %n = kiln.rms_norm %x weight "ffn_norm" eps 1.0e-05 : tensor<?x64xf32>
  %d = kiln.linear %n weight "down" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %d, %n : tensor<?x64xf32>, tensor<?x64xf32>
}

// Negative: an elementwise reader.
// CHECK-LABEL: func.func @add_reader
// CHECK: kiln.rms_norm
// CHECK-NOT: kiln.rms_normalize
func.func @add_reader(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %n = kiln.rms_norm %x weight "g" eps 1.0e-05 : tensor<?x64xf32>
  %d = kiln.linear %n weight "w" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %s = kiln.add %n, %d : tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// Negative: a quantised reader (W diag(g) would quantise to other codes than W).
// CHECK-LABEL: func.func @quantised_reader
// CHECK: kiln.rms_norm %{{.*}} weight "g2"
// CHECK: kiln.linear %{{.*}} weight "wf" format f32
// CHECK: kiln.linear %{{.*}} weight "wq" format q8_0
func.func @quantised_reader(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %n = kiln.rms_norm %x weight "g2" eps 1.0e-05 : tensor<?x64xf32>
  %a = kiln.linear %n weight "wf" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %b = kiln.linear %n weight "wq" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}
