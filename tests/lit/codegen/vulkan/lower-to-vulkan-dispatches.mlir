// RUN: kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8" --kiln-lower-to-vulkan-dispatches %s | FileCheck %s

// Every op becomes dispatches of codegen/vulkan/kernels with the memory plan's offsets (in
// floats) and symbolic weight offsets; a linear has a decode and a prefill form; attention
// with fused RoPE rotates q and k in place, stores K/V, then attends. The module is left
// for the CPU lowering.
module attributes {kiln.vocab_size = 32 : i32} {
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  %x = kiln.embed %tok weight "tok" format q8_0 : tensor<?xi32> -> tensor<?x64xf32>
  %n = kiln.rms_norm %x weight "n0" eps 1.0e-05 : tensor<?x64xf32>
  %q = kiln.linear %n weight "q" format q4_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  %k = kiln.linear %n weight "k" format f16 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %n weight "v" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %a = kiln.attention %q, %k, %v, %pos layer 0 heads 4 kv_heads 2 head_dim 16 scale 0.25 rope rotary_dims 16 theta 1.0e+04 style adjacent : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %s = kiln.silu %a : tensor<?x64xf32>
  %h = kiln.add %s, %x : tensor<?x64xf32>
  %l = kiln.logits %h weight "tok" format q8_0 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}
// CHECK: vulkan program: 16 dispatches, gpu scratch 8192 bytes
// CHECK-NEXT: embed (op {{[0-9]+}} kiln.embed) constants [64, 8] bindings [weights, tokens, scratch] push [64, 1n+0, 0+stride(tok), 0+offset(tok), 0, [[X:[0-9]+]]] groups 1/1 1n+0/1 1/1
// CHECK-NEXT: rms_norm (op {{[0-9]+}} kiln.rms_norm) constants [64, 0] bindings [weights, scratch, scratch] push [64, 0+offset(n0), [[X]], {{[0-9]+}}, 925353388, 1] groups 1n+0/1 1/1 1/1
// CHECK-NEXT: linear [decode] (op {{[0-9]+}} kiln.linear) constants [64, 2, 2, 1] bindings [weights, scratch, scratch, scratch] push [64, 64, 0+stride(q), 0+offset(q), {{.*}}, 1n+0, 64] groups 32/1 1/1 1/1
// CHECK-NEXT: matmul [prefill] (op {{[0-9]+}} kiln.linear) constants [64, 2, 2, 8] {{.*}} groups 1/1 1n+0/8 1/1
// CHECK-NEXT: linear [decode] (op {{[0-9]+}} kiln.linear) constants [64, 1, 2, 1]
// CHECK-NEXT: matmul [prefill]
// CHECK-NEXT: linear [decode] (op {{[0-9]+}} kiln.linear) constants [64, 0, 2, 1]
// CHECK-NEXT: matmul [prefill]
// CHECK-NEXT: rope (op {{[0-9]+}} kiln.attention) constants [64] bindings [weights, scratch, positions] push [1n+0, 64, 16, 16, 0, {{[0-9]+}}, 0+offset(rope.0.cos), 0+offset(rope.0.sin), 0]
// CHECK-NEXT: rope (op {{[0-9]+}} kiln.attention) constants [64] bindings [weights, scratch, positions] push [1n+0, 32, 16, 16, 0,
// CHECK-NEXT: kv_store (op {{[0-9]+}} kiln.attention) constants [64, 0, 0] bindings [scratch, scratch, kv, positions]
// CHECK-NEXT: attention (op {{[0-9]+}} kiln.attention) constants [64, 0, 0] bindings [scratch, kv, positions, gpu_scratch, scratch] push [4, 2, 16, 64, 1048576000,
// CHECK-SAME: groups 4/1 1n+0/1 1/1
// CHECK-NEXT: eltwise (op {{[0-9]+}} kiln.silu) constants [64, 2] bindings [scratch, scratch, scratch] push [64n+0,
// CHECK-SAME: groups 64n+0/64 1/1 1/1
// CHECK-NEXT: eltwise (op {{[0-9]+}} kiln.add) constants [64, 0]
// CHECK-NEXT: linear [decode] (op {{[0-9]+}} kiln.logits) constants [64, 8, 2, 1] bindings [weights, scratch, logits, scratch]
// CHECK-NEXT: matmul [prefill] (op {{[0-9]+}} kiln.logits)
// CHECK: func.func @forward
// CHECK: kiln.attention
