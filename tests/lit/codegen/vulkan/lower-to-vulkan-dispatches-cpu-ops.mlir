// RUN: kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8" --kiln-lower-to-vulkan-dispatches %s 2>&1 | FileCheck %s

// An op the Vulkan lowering cannot take is compiled for the CPU only: the program lists it
// with the reason, the artifact's per-op CPU entry computes it wherever the program runs,
// and one remark says how many and why. The GPU ops around it keep their dispatches.
module attributes {kiln.vocab_size = 32 : i32} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %q = kiln.linear %x weight "q" format f32 : tensor<?x64xf32> -> tensor<?x48xf32>
  %k = kiln.linear %x weight "k" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %x weight "v" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %a = kiln.attention %q, %k, %v, %pos layer 0 heads 3 kv_heads 2 head_dim 16 scale 0.25 kv_head_map [0, 1, 1] : tensor<?x48xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x48xf32>
  %l = kiln.logits %a weight "out" format q3_k : tensor<?x48xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}
// CHECK: remark: 2 ops compiled for the CPU only, run there by the per-op fallback wherever the program runs
// CHECK-SAME: 1 op, kiln.attention: query heads mapped to KV heads explicitly (pruned heads)
// CHECK-SAME: 1 op, kiln.logits: weights of format 11 (the Vulkan kernels read f32, f16, q8_0, q4_0, q4_1, q4_K, q5_K and q6_K)
// CHECK: vulkan program: 9 dispatches
// CHECK: embed (op 0 kiln.embed)
// CHECK: linear [decode] (op 1 kiln.linear)
// CHECK: matmul [prefill] (op 3 kiln.linear)
// CHECK-NEXT: cpu (op 4 kiln.attention): query heads mapped to KV heads explicitly (pruned heads), which the Vulkan attention does not take yet
// CHECK-NEXT: cpu (op 5 kiln.logits): weights of format 11
