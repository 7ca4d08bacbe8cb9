// RUN: kiln-opt --kiln-assign-layout --kiln-size-weight-shards="cache-kib=512" %s | FileCheck %s
// RUN: kiln-opt --kiln-assign-layout="layout=r32" --kiln-size-weight-shards="cache-kib=512" %s | FileCheck %s --check-prefix=R32
// RUN: kiln-opt --kiln-size-weight-shards="cache-kib=512" %s | FileCheck %s --check-prefix=NOLAYOUT
// RUN: not kiln-opt --kiln-size-weight-shards="cache-kib=32" %s 2>&1 | FileCheck %s --check-prefix=SMALL

// A shard is a quarter of 512 KiB (131072 bytes) in whole row groups. 2048-wide rows are 64
// blocks: an r16 q4_0 group is 64 x (256 code + 32 scale) = 18432 bytes -> 7 groups, r32
// 36864 -> 3; r16 q8_0 is 64 x 544 = 34816 -> 3. A shard never exceeds the matrix (64 rows
// are 4 r16 groups) and never drops below one group (a 40960-wide q8_0 group is 696320
// bytes). Ops without a packed layout (f16 keeps rows64) get none.
// CHECK-LABEL: func.func @forward
// R32-LABEL: func.func @forward
// NOLAYOUT-NOT: kiln.shard_groups
func.func @forward(%x: tensor<?x2048xf32>, %w: tensor<?x40960xf32>) -> tensor<?x512xf32> {
  // CHECK: kiln.linear %{{.*}} weight "a" format q4_0 {{{.*}}kiln.shard_groups = 7 : i64
  // R32: kiln.linear %{{.*}} weight "a" format q4_0 {{{.*}}kiln.shard_groups = 3 : i64
  %a = kiln.linear %x weight "a" format q4_0 : tensor<?x2048xf32> -> tensor<?x2048xf32>
  // CHECK: kiln.linear %{{.*}} weight "s" format q4_0 {{{.*}}kiln.shard_groups = 4 : i64
  // R32: kiln.linear %{{.*}} weight "s" format q4_0 {{{.*}}kiln.shard_groups = 2 : i64
  %s = kiln.linear %x weight "s" format q4_0 : tensor<?x2048xf32> -> tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "b" format f16
  // CHECK-NOT: kiln.shard_groups
  // CHECK-SAME: {{$}}
  %b = kiln.linear %x weight "b" format f16 : tensor<?x2048xf32> -> tensor<?x64xf32>
  // The stacked q, k, v weight has 64 + 32 + 32 rows (8 r16 groups); SwiGLU's has twice its
  // result's 64 (gate and up interleaved).
  // CHECK: kiln.fused_linear %{{.*}} weight "qkv" format q8_0 {{{.*}}kiln.shard_groups = 3 : i64
  %q, %k, %v = kiln.fused_linear %x weight "qkv" format q8_0 : (tensor<?x2048xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
  // CHECK: kiln.fused_linear %{{.*}} weight "gu" format q4_0 swiglu {{{.*}}kiln.shard_groups = 7 : i64
  // R32: kiln.fused_linear %{{.*}} weight "gu" format q4_0 swiglu {{{.*}}kiln.shard_groups = 3 : i64
  %g = kiln.fused_linear %x weight "gu" format q4_0 swiglu : (tensor<?x2048xf32>) -> tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "d" format q8_0 {{{.*}}kiln.shard_groups = 1 : i64
  %d = kiln.linear %w weight "d" format q8_0 : tensor<?x40960xf32> -> tensor<?x64xf32>
  // CHECK: kiln.logits %{{.*}} weight "output.weight" format q8_0 {{{.*}}kiln.shard_groups = 3 : i64
  %l = kiln.logits %x weight "output.weight" format q8_0 : tensor<?x2048xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}

// SMALL: kiln-size-weight-shards: cache-kib 32 is outside 64..1048576
