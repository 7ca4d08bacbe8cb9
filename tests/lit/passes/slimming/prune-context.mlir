// RUN: kiln-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-context{max-ctx=256})' | FileCheck %s

// A 2048-position model capped at 256: kiln.max_ctx is recorded, and the effects count
// the fp32 K and V of both attention ops (2 x 2 x 32 features x 4 bytes = 512 bytes per
// token) and one cos/sin table pair (rotary_dims 8: 4 floats each per position).
// CHECK-LABEL: module @capped
// CHECK-SAME: kiln.max_ctx = 256 : i32
// CHECK-SAME: "kiln-prune-context" = "declared_ctx=2048,max_ctx=256,kv_bytes_per_token=512,kv_bytes_declared=1048576,kv_bytes=131072,kv_bytes_saved=917504,rope_table_bytes_declared=65536,rope_table_bytes=8192,rope_table_bytes_saved=57344"
// The ops are left exactly as they were.
// CHECK: kiln.attention {{.*}} layer 0 heads 8 kv_heads 4
// CHECK: kiln.attention {{.*}} layer 1 heads 8 kv_heads 4
// expected-remark @below {{kiln-prune-context: declared_ctx=2048,max_ctx=256,kv_bytes_per_token=512,kv_bytes_declared=1048576,kv_bytes=131072,kv_bytes_saved=917504,rope_table_bytes_declared=65536,rope_table_bytes=8192,rope_table_bytes_saved=57344}}
module @capped attributes {kiln.context_length = 2048 : i32} {
  func.func @forward(%pos: tensor<?xi32>, %x: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>) -> tensor<?x64xf32> {
    %q = kiln.rope %x, %pos head_dim 8 rotary_dims 8 theta 1.000000e+04 style adjacent : tensor<?x64xf32>, tensor<?xi32>
    %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 8 theta 1.000000e+04 style adjacent : tensor<?x32xf32>, tensor<?xi32>
    %a0 = kiln.attention %q, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 {kiln.layer = 0 : i32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %a1 = kiln.attention %a0, %kr, %v, %pos layer 1 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 {kiln.layer = 1 : i32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
    return %a1 : tensor<?x64xf32>
  }
}

// -----

// A cap above the declared context (stories260K declares 128 but was trained on 512) is
// kept with a warning; the savings are negative. A model without attention has no KV bytes.
// CHECK-LABEL: module @above_declared
// CHECK-SAME: kiln.max_ctx = 256 : i32
// CHECK-SAME: "declared_ctx=128,max_ctx=256,kv_bytes_per_token=0,kv_bytes_declared=0,kv_bytes=0,kv_bytes_saved=0,rope_table_bytes_declared=0,rope_table_bytes=0,rope_table_bytes_saved=0"
// CHECK: kiln.rms_norm
// expected-warning @below {{kiln-prune-context: max-ctx 256 exceeds the declared context 128; the KV cache and RoPE tables grow}}
// expected-remark @below {{kiln-prune-context: declared_ctx=128,max_ctx=256}}
module @above_declared attributes {kiln.context_length = 128 : i32} {
  func.func @forward(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
    %y = kiln.rms_norm %x weight "n" eps 1.0e-05 : tensor<?x64xf32>
    return %y : tensor<?x64xf32>
  }
}
