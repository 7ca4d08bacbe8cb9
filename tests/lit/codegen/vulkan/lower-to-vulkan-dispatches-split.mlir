// RUN: kiln-opt --kiln-plan-memory="max-ctx=16 max-batch=4" --kiln-lower-to-vulkan-dispatches="max-binding-bytes=16384 row-align=64" %s | FileCheck %s

// A linear whose weights are larger than one binding may span is split by rows: 200 rows
// of 64 f32 (256 bytes each) under 16,384 bytes are dispatches of 64, 64, 64 and 8 rows,
// each reading its rows (offset(w, rows r0)) into columns r0.. of the logits, every
// token's row 200 floats apart (the last push word).
module attributes {kiln.vocab_size = 200 : i32} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x200xf32> {
  %x = kiln.embed %tok weight "e" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %l = kiln.logits %x weight "out" format f32 : tensor<?x64xf32> -> tensor<?x200xf32>
  return %l : tensor<?x200xf32>
}
}
// CHECK: vulkan program: 9 dispatches
// CHECK: linear [decode] (op 1 kiln.logits) {{.*}} push [64, 64, 0+stride(out), 0+offset(out), {{[0-9]+}}, 0, 0, 0, 1n+0, 200] groups 32/1 1/1 1/1
// CHECK-NEXT: matmul [prefill] (op 1 kiln.logits) {{.*}} push [64, 64, 0+stride(out), 0+offset(out), {{[0-9]+}}, 0, 0, 0, 1n+0, 200] groups 1/1 1n+0/8 1/1
// CHECK-NEXT: linear [decode] (op 1 kiln.logits) {{.*}} push [64, 64, 0+stride(out), 0+offset(out, rows 64), {{[0-9]+}}, 64, 0, 0, 1n+0, 200] groups 32/1
// CHECK-NEXT: matmul [prefill]
// CHECK-NEXT: linear [decode] (op 1 kiln.logits) {{.*}} push [64, 64, 0+stride(out), 0+offset(out, rows 128), {{[0-9]+}}, 128, 0, 0, 1n+0, 200] groups 32/1
// CHECK-NEXT: matmul [prefill]
// CHECK-NEXT: linear [decode] (op 1 kiln.logits) {{.*}} push [64, 8, 0+stride(out), 0+offset(out, rows 192), {{[0-9]+}}, 192, 0, 0, 1n+0, 200] groups 4/1
// CHECK-NEXT: matmul [prefill] (op 1 kiln.logits) {{.*}} push [64, 8, {{.*}}] groups 1/1 1n+0/8 1/1
