// RUN: kiln-opt --kiln-lower-to-ukernels --split-input-file --verify-diagnostics %s

// The lowering reads the memory plan: without kiln-plan-memory it stops at the module.
// expected-error @+1 {{the module has no memory plan (run kiln-plan-memory first)}}
module {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %l = kiln.logits %x weight "tok" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}

// -----

// A planned op whose buffers were dropped.
module attributes {kiln.memory_plan = {kv_bytes = 0 : i64, kv_bytes_per_token = 0 : i64, kv_k = 0 : i64, kv_v = 0 : i64, max_batch = 8 : i64, max_ctx = 64 : i64, scratch_bytes = 2048 : i64, scratch_bytes_without_reuse = 2048 : i64}} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{has no memory plan (run kiln-plan-memory first)}}
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %l = kiln.logits %x weight "tok" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}

// -----

// A weight read in two formats cannot be stored once.
module attributes {kiln.memory_plan = {kv_bytes = 0 : i64, kv_bytes_per_token = 0 : i64, kv_k = 0 : i64, kv_v = 0 : i64, max_batch = 8 : i64, max_ctx = 64 : i64, scratch_bytes = 2048 : i64, scratch_bytes_without_reuse = 2048 : i64}} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 {kiln.buffers = array<i64: 0>} : tensor<?xi32> -> tensor<?x64xf32>
  // expected-error @+1 {{weight 'tok' is read in two formats or layouts}}
  %l = kiln.logits %x weight "tok" format q8_0 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}
