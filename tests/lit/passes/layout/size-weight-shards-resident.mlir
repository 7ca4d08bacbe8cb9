// RUN: kiln-opt --split-input-file --kiln-assign-layout="layout=r32" --kiln-size-weight-shards="cache-kib=512" %s | FileCheck %s

// Packed weights that fit in half the cache stay there between tokens, so they get no
// shards; the sum is over the whole module. A 256-wide r32 q4_0 group is 8 blocks x 576
// bytes = 4608. Two 2048-row matrices are 2 x 64 groups = 576 KiB, more than half of 512
// KiB: both are sharded, 28 groups (a quarter: 128 KiB) a shard.
// CHECK-LABEL: func.func @big
// CHECK-COUNT-2: kiln.shard_groups = 28 : i64
func.func @big(%x: tensor<?x256xf32>) -> tensor<?x2048xf32> {
  %a = kiln.linear %x weight "a" format q4_0 : tensor<?x256xf32> -> tensor<?x2048xf32>
  %b = kiln.linear %x weight "b" format q4_0 : tensor<?x256xf32> -> tensor<?x2048xf32>
  return %b : tensor<?x2048xf32>
}

// -----

// Two 896-row matrices are 2 x 28 groups = 252 KiB: resident, no shards.
// CHECK-LABEL: func.func @resident
// CHECK-NOT: kiln.shard_groups
func.func @resident(%x: tensor<?x256xf32>) -> tensor<?x896xf32> {
  %a = kiln.linear %x weight "a" format q4_0 : tensor<?x256xf32> -> tensor<?x896xf32>
  %b = kiln.linear %x weight "b" format q4_0 : tensor<?x256xf32> -> tensor<?x896xf32>
  return %b : tensor<?x896xf32>
}
