// RUN: kiln-opt %s | FileCheck %s

// Every derived-weight recipe (DeriveOp, KilnBase.td) with its fields, the layout enum and
// pass effects verify and round-trip.
// CHECK: kiln.derived_weights = {a = {factor = 5.000000e-01 : f32, op = "scale", source = "w"}, b = {op = "concat_rows", sources = ["q", "k"]}, c = {op = "values", values = array<f32: 1.000000e+00>}, d = {by = "g", op = "scale_cols", source = "w"}, e = {indices = array<i64: 1>, op = "select_cols", source = "w"}, f = {op = "interleave_rows", sources = ["g", "u"]}, q = {op = "rotate_rows", seed = 7 : i64, source = "w"}, qc = {op = "rotate_cols", seed = 7 : i64, source = "w"}, r = {indices = array<i64: 0, 2>, op = "select_rows", source = "w"}}
// CHECK-SAME: kiln.pass_effects = {"kiln-prune-layers" = "removed=2,kept=3", x = ""}
module attributes {kiln.derived_weights = {a = {op = "scale", source = "w", factor = 0.5 : f32}, b = {op = "concat_rows", sources = ["q", "k"]}, c = {op = "values", values = array<f32: 1.0>}, d = {op = "scale_cols", source = "w", by = "g"}, e = {op = "select_cols", source = "w", indices = array<i64: 1>}, f = {op = "interleave_rows", sources = ["g", "u"]}, q = {op = "rotate_rows", source = "w", seed = 7 : i64}, qc = {op = "rotate_cols", source = "w", seed = 7 : i64}, r = {op = "select_rows", source = "w", indices = array<i64: 0, 2>}}, kiln.pass_effects = {"kiln-prune-layers" = "removed=2,kept=3", x = ""}} {
  // CHECK: kiln.layout = #kiln.layout<r32>
  func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
    %y = kiln.linear %x weight "w" format q4_0 {kiln.layout = #kiln.layout<r32>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %y : tensor<?x64xf32>
  }
}
