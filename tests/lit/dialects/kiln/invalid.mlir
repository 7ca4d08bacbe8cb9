// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @embed_rank(%t: tensor<?x2xi32>) {
  // expected-error @+1 {{tokens must be rank 1 [tokens]}}
  %x = kiln.embed %t weight "e" format f32 : tensor<?x2xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @embed_rows(%t: tensor<3xi32>) {
  // expected-error @+1 {{has 3 token ids but 4 result rows}}
  %x = kiln.embed %t weight "e" format f32 : tensor<3xi32> -> tensor<4x64xf32>
  return
}

// -----

func.func @embed_name(%t: tensor<?xi32>) {
  // expected-error @+1 {{weight name must not be empty}}
  %x = kiln.embed %t weight "" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @bad_format(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'format'}}
  %y = kiln.linear %x weight "w" format q9_9 : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @norm_eps(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{eps must be in (0, 1]}}
  %y = kiln.rms_norm %x weight "n" eps 0.0 : tensor<?x64xf32>
  return
}

// -----

func.func @norm_format(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{format must be f32 or f16, got q8_0}}
  %y = kiln.rms_norm %x weight "n" eps 1.0e-5 format q8_0 : tensor<?x64xf32>
  return
}

// -----

func.func @norm_rank(%x: tensor<?xf32>) {
  // expected-error @+1 {{input must be rank 2 [tokens, features]}}
  %y = kiln.rms_norm %x weight "n" eps 1.0e-5 : tensor<?xf32>
  return
}

// -----

func.func @linear_dynamic_features(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{input must have a static positive feature dimension}}
  %y = kiln.linear %x weight "w" format f32 : tensor<?x?xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @linear_tokens(%x: tensor<2x64xf32>) {
  // expected-error @+1 {{input has 2 tokens but result has 3}}
  %y = kiln.linear %x weight "w" format f32 : tensor<2x64xf32> -> tensor<3x64xf32>
  return
}

// -----

func.func @rope_head_dim(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{head_dim 12 must be positive and divide the 64 features}}
  %y = kiln.rope %x, %p head_dim 12 rotary_dims 12 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_odd_dims(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rotary_dims 5 must be even and in [2, head_dim = 8]}}
  %y = kiln.rope %x, %p head_dim 8 rotary_dims 5 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_wide_dims(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rotary_dims 16 must be even and in [2, head_dim = 8]}}
  %y = kiln.rope %x, %p head_dim 8 rotary_dims 16 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_theta(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{theta must be positive}}
  %y = kiln.rope %x, %p head_dim 8 rotary_dims 8 theta -1.0 style rotate_half : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_freq_factor_count(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{has 3 freq_factors for 4 rotated pairs}}
  %y = kiln.rope %x, %p head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent freq_factors [1.0, 2.0, 4.0] : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_freq_factor_value(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{freq_factors must be finite and positive, got 0}}
  %y = kiln.rope %x, %p head_dim 8 rotary_dims 4 theta 1.0e4 style adjacent freq_factors [1.0, 0.0] : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_positions(%x: tensor<2x64xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{input has 2 tokens but positions has 3}}
  %y = kiln.rope %x, %p head_dim 8 rotary_dims 8 theta 1.0e4 style adjacent : tensor<2x64xf32>, tensor<3xi32>
  return
}

// -----

func.func @attn_q_width(%q: tensor<?x60xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{q has 60 features but heads * head_dim = 64}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x60xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x60xf32>
  return
}

// -----

func.func @attn_kv_width(%q: tensor<?x64xf32>, %k: tensor<?x24xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{k/v have 24 features but kv_heads * head_dim = 32}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x24xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attn_groups(%q: tensor<?x64xf32>, %k: tensor<?x24xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{heads (8) must be a multiple of kv_heads (3) unless kv_head_map is given}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 3 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x24xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attn_map_size(%q: tensor<?x24xf32>, %k: tensor<?x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kv_head_map has 2 entries for 3 heads}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 3 kv_heads 2 head_dim 8 scale 0.35 kv_head_map [0, 1] : tensor<?x24xf32>, tensor<?x16xf32>, tensor<?xi32> -> tensor<?x24xf32>
  return
}

// -----

func.func @attn_map_range(%q: tensor<?x24xf32>, %k: tensor<?x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kv_head_map entry 2 is not a KV head in [0, 2)}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 3 kv_heads 2 head_dim 8 scale 0.35 kv_head_map [0, 1, 2] : tensor<?x24xf32>, tensor<?x16xf32>, tensor<?xi32> -> tensor<?x24xf32>
  return
}

// -----

func.func @attn_layer(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{layer must be non-negative, got -1}}
  %o = kiln.attention %q, %k, %k, %p layer -1 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attn_scale(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{scale must be positive}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.0 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attn_tokens(%q: tensor<2x64xf32>, %k: tensor<3x32xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{q has 2 tokens but k has 3}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 : tensor<2x64xf32>, tensor<3x32xf32>, tensor<2xi32> -> tensor<2x64xf32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @mul_types(%a: tensor<?x64xf32>, %b: tensor<?x32xf32>) {
  // expected-error @+1 {{use of value '%b' expects different type than prior uses}}
  %m = kiln.mul %a, %b : tensor<?x64xf32>
  return
}

// -----

func.func @add_int(%a: tensor<?x64xi32>) {
  // expected-error @+1 {{must be ranked tensor of 32-bit float values}}
  %m = kiln.add %a, %a : tensor<?x64xi32>
  return
}

// -----

func.func @silu_rank(%a: tensor<?xf32>) {
  // expected-error @+1 {{input must be rank 2 [tokens, features]}}
  %s = kiln.silu %a : tensor<?xf32>
  return
}

// -----

func.func @add_dynamic(%a: tensor<?x?xf32>) {
  // expected-error @+1 {{operands must have a static positive feature dimension}}
  %s = kiln.add %a, %a : tensor<?x?xf32>
  return
}

// -----

func.func @linear_empty_bias(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{bias name must not be empty}}
  %y = kiln.linear %x weight "w" bias "" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attn_rope_partial(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope_rotary_dims, rope_theta and rope_style go together}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 {rope_rotary_dims = 8 : i32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @normalize_eps(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{eps must be in (0, 1], got 0}}
  %n = kiln.rms_normalize %x eps 0.0 : tensor<?x64xf32>
  return
}

// -----

func.func @attn_rope_dims(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope rotary_dims 10 must be even and in [2, head_dim = 8]}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 rope rotary_dims 10 theta 1.0e4 style adjacent : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @fused_too_many(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{must have 1 to 3 results, got 4}}
  %a:4 = kiln.fused_linear %x weight "w" format f32 : (tensor<?x64xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @attn_rope_theta(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope theta must be positive}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 rope rotary_dims 8 theta -1.0 style adjacent : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @fused_swiglu_segments(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{with swiglu or a residual must have exactly one result}}
  %a:2 = kiln.fused_linear %x weight "w" format f32 swiglu : (tensor<?x64xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @fused_swiglu_residual(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{cannot have both swiglu and a residual}}
  %a = kiln.fused_linear %x residual %x weight "w" format f32 swiglu : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @fused_residual_type(%x: tensor<?x64xf32>, %r: tensor<?x32xf32>) {
  // expected-error @+1 {{residual type 'tensor<?x32xf32>' differs from the result type 'tensor<?x64xf32>'}}
  %a = kiln.fused_linear %x residual %r weight "w" format f32 : (tensor<?x64xf32>, tensor<?x32xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @fused_empty_weight(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{weight name must not be empty}}
  %a = kiln.fused_linear %x weight "" format f32 : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @fused_tokens(%x: tensor<2x64xf32>) {
  // expected-error @+1 {{input has 2 tokens but result has 3}}
  %a = kiln.fused_linear %x weight "w" format f32 : (tensor<2x64xf32>) -> tensor<3x64xf32>
  return
}

// -----

func.func @attn_freq_factors_alone(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{rope_freq_factors needs the rope group}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 freq_factors [1.0, 8.0] : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attn_freq_factor_count(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{has 1 freq_factors for 2 rotated pairs}}
  %o = kiln.attention %q, %k, %k, %p layer 0 heads 8 kv_heads 4 head_dim 8 scale 0.35 rope rotary_dims 4 theta 1.0e4 style adjacent freq_factors [8.0] : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}
