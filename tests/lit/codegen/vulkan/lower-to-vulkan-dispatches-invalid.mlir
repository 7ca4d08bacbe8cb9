// RUN: kiln-opt --split-input-file --verify-diagnostics --kiln-plan-memory="max-ctx=64 max-batch=8" --kiln-lower-to-vulkan-dispatches %s

// A format the Vulkan kernels do not read.
module attributes {kiln.vocab_size = 32 : i32} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x256xf32>
  // expected-error @below {{reads format 12; the Vulkan kernels read f32, f16, q8_0, q4_0 and q4_1}}
  %l = kiln.logits %x weight "out" format q4_k : tensor<?x256xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}

// -----

// Pruned heads (an explicit query-head -> KV-head map).
module attributes {kiln.vocab_size = 32 : i32} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %q = kiln.linear %x weight "q" format f32 : tensor<?x64xf32> -> tensor<?x48xf32>
  %k = kiln.linear %x weight "k" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %x weight "v" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  // expected-error @below {{maps query heads to KV heads explicitly}}
  %a = kiln.attention %q, %k, %v, %pos layer 0 heads 3 kv_heads 2 head_dim 16 scale 0.25 kv_head_map [0, 1, 1] : tensor<?x48xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x48xf32>
  %l = kiln.logits %a weight "out" format f32 : tensor<?x48xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}
