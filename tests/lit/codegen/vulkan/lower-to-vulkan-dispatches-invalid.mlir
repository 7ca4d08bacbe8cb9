// RUN: kiln-opt --split-input-file --verify-diagnostics --kiln-lower-to-vulkan-dispatches %s

// The lowering needs the memory plan's buffers (ops it cannot take are not errors: they
// are compiled for the CPU only, lower-to-vulkan-dispatches-cpu-ops.mlir).
// expected-error @below {{has no memory plan}}
module attributes {kiln.vocab_size = 32 : i32} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x256xf32>
  %l = kiln.logits %x weight "out" format f32 : tensor<?x256xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}

// -----

// expected-error @below {{the module has no @forward}}
module attributes {kiln.vocab_size = 32 : i32} {
func.func @other(%tok: tensor<?xi32>) -> tensor<?xi32> {
  return %tok : tensor<?xi32>
}
}
