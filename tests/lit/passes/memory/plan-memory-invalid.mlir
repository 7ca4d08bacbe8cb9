// RUN: kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8" --split-input-file --verify-diagnostics %s
// RUN: not kiln-opt --kiln-plan-memory="max-ctx=8 max-batch=16" --split-input-file %s 2>&1 | FileCheck %s --check-prefix=SIZES
// RUN: not kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8 kv=int8" --split-input-file %s 2>&1 | FileCheck %s --check-prefix=KV

// SIZES: max-ctx (8) and max-batch (16) must be positive, batch <= context
// KV: kiln-plan-memory: bad --kv 'int8'

func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  // expected-error @+1 {{rotates in place, so its input must have no other use}}
  %r = kiln.rope %x, %pos head_dim 16 rotary_dims 16 theta 1.0e+04 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %s = kiln.add %r, %x : tensor<?x64xf32>
  %l = kiln.logits %s weight "tok" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}

// -----

func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x2048xf32>
  // expected-error @+1 {{head_dim 1024 exceeds the CPU kernels' 512}}
  %a = kiln.attention %x, %x, %x, %pos layer 0 heads 2 kv_heads 2 head_dim 1024 scale 0.03 : tensor<?x2048xf32>, tensor<?x2048xf32>, tensor<?xi32> -> tensor<?x2048xf32>
  %l = kiln.logits %a weight "out" format f32 : tensor<?x2048xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}

// -----

func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  // expected-error @+1 {{must be @forward's returned value}}
  %l = kiln.logits %x weight "tok" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %m = kiln.silu %l : tensor<?x32xf32>
  return %m : tensor<?x32xf32>
}

// -----

// expected-error @+1 {{the module has no @forward(tokens, positions) -> logits}}
module {
  func.func @other(%tok: tensor<?xi32>) -> tensor<?xi32> {
    return %tok : tensor<?xi32>
  }
}
