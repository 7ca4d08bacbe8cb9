// RUN: kiln-opt --kiln-fuse-rope-into-attention --split-input-file %s | FileCheck %s

// The llama pattern: both ropes fold into the attention, which now reads the unrotated
// linear outputs.
// CHECK-LABEL: func.func @fuses
// CHECK-SAME: (%[[Q:.*]]: tensor<?x64xf32>, %[[K:.*]]: tensor<?x32xf32>, %[[V:.*]]: tensor<?x32xf32>, %[[P:.*]]: tensor<?xi32>)
// CHECK-NOT: kiln.rope
// CHECK: kiln.attention %[[Q]], %[[K]], %[[V]], %[[P]] layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 rope rotary_dims 8 theta 1.000000e+04 style adjacent
// CHECK-NOT: kiln.rope
func.func @fuses(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x32xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// -----

// Partial rotation, rotate-half pairing and a head map carry over.
// CHECK-LABEL: func.func @partial_rotate_half
// CHECK-NOT: kiln.rope
// CHECK: kiln.attention {{.*}} kv_head_map [0, 0, 1] rope rotary_dims 4 theta 5.000000e+05 style rotate_half
func.func @partial_rotate_half(%q: tensor<?x24xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>, %pos: tensor<?xi32>) -> tensor<?x24xf32> {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 4 theta 5.0e5 style rotate_half : tensor<?x24xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 4 theta 5.0e5 style rotate_half : tensor<?x16xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 1 heads 3 kv_heads 2 head_dim 8 scale 0.35 kv_head_map [0, 0, 1] : tensor<?x24xf32>, tensor<?x16xf32>, tensor<?xi32> -> tensor<?x24xf32>
  return %a : tensor<?x24xf32>
}

// -----

// The rotated k is also returned: fusing would drop a value someone reads.
// CHECK-LABEL: func.func @rope_with_other_use
// CHECK: kiln.rope
// CHECK: kiln.rope
// CHECK: kiln.attention
// CHECK-NOT: rope rotary_dims
func.func @rope_with_other_use(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> (tensor<?x64xf32>, tensor<?x32xf32>) {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x32xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a, %kr : tensor<?x64xf32>, tensor<?x32xf32>
}

// -----

// A rope that feeds something other than an attention stays.
// CHECK-LABEL: func.func @rope_feeds_add
// CHECK: kiln.rope
// CHECK: kiln.add
func.func @rope_feeds_add(%x: tensor<?x64xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  %r = kiln.rope %x, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %s = kiln.add %r, %x : tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// -----

// q and k rotated with different theta: one set of attrs cannot express both.
// CHECK-LABEL: func.func @theta_mismatch
// CHECK-COUNT-2: kiln.rope
// CHECK: kiln.attention
// CHECK-NOT: rope rotary_dims
func.func @theta_mismatch(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 8 theta 5.0e5 style adjacent : tensor<?x32xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// -----

// Different pairing or rotary dims between q and k: not fused either.
// CHECK-LABEL: func.func @style_and_dims_mismatch
// CHECK-COUNT-4: kiln.rope
// CHECK-NOT: rope rotary_dims
func.func @style_and_dims_mismatch(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style rotate_half : tensor<?x32xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q2 = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %k2 = kiln.rope %k, %pos head_dim 8 rotary_dims 4 theta 1.0e4 style adjacent : tensor<?x32xf32>, tensor<?xi32>
  %b = kiln.attention %q2, %k2, %v, %pos layer 1 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Only q is rotated (k arrives from elsewhere): the kernel rotates both or neither.
// CHECK-LABEL: func.func @only_q_rotated
// CHECK: kiln.rope
// CHECK: kiln.attention
// CHECK-NOT: rope rotary_dims
func.func @only_q_rotated(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %k, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// -----

// Rope at other positions than the attention's (or a head_dim other than the attention's).
// CHECK-LABEL: func.func @other_positions
// CHECK-COUNT-2: kiln.rope
// CHECK-NOT: rope rotary_dims
func.func @other_positions(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>, %pos2: tensor<?xi32>) -> tensor<?x64xf32> {
  %qr = kiln.rope %q, %pos2 head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos2 head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x32xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// -----

// An already fused attention is left alone, and running the pass twice changes nothing more.
// RUN: kiln-opt --kiln-fuse-rope-into-attention --kiln-fuse-rope-into-attention --split-input-file %s | FileCheck %s --check-prefix=TWICE
// TWICE-LABEL: func.func @fuses
// TWICE: kiln.attention {{.*}} rope rotary_dims 8 theta 1.000000e+04 style adjacent
// CHECK-LABEL: func.func @already_fused
// CHECK: kiln.attention {{.*}} scale 3.500000e-01 rope rotary_dims 8 theta 1.000000e+04 style adjacent :
func.func @already_fused(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  %a = kiln.attention %q, %k, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 rope rotary_dims 8 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// -----

// Llama 3's frequency factors move with the rope; q and k with different factors stay.
// CHECK-LABEL: func.func @freq_factors
// CHECK-NOT: kiln.rope
// CHECK: kiln.attention {{.*}} rope rotary_dims 4 theta 5.000000e+05 style adjacent freq_factors [1.000000e+00, 8.000000e+00]
// CHECK-LABEL: func.func @different_freq_factors
// CHECK: kiln.rope
// CHECK: kiln.rope
// CHECK-NOT: rope rotary_dims
func.func @freq_factors(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 4 theta 5.0e5 style adjacent freq_factors [1.0, 8.0] : tensor<?x64xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 4 theta 5.0e5 style adjacent freq_factors [1.0, 8.0] : tensor<?x32xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}
func.func @different_freq_factors(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
  %qr = kiln.rope %q, %pos head_dim 8 rotary_dims 4 theta 5.0e5 style adjacent freq_factors [1.0, 8.0] : tensor<?x64xf32>, tensor<?xi32>
  %kr = kiln.rope %k, %pos head_dim 8 rotary_dims 4 theta 5.0e5 style adjacent : tensor<?x32xf32>, tensor<?xi32>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.353553385 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}
