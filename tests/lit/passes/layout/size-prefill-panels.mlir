// RUN: kiln-opt --kiln-assign-layout --kiln-size-prefill-panels="cache-kib=256 max-batch=128" %s | FileCheck %s
// RUN: kiln-opt --kiln-assign-layout --kiln-size-prefill-panels="cache-kib=256" %s | FileCheck %s --check-prefix=ANY
// RUN: not kiln-opt --kiln-size-prefill-panels="cache-kib=8" %s 2>&1 | FileCheck %s --check-prefix=SMALL

// Half of 256 KiB holds 46 tokens of a 2048-wide r16 activation (2816 bytes each: int8
// codes and block scales), so the panel is 40 (whole 8-token tiles); fp32 rows of 2048 take
// 8 KiB a token, so 16. A 64-wide input fits 1024 tokens, more than max-batch: no panel,
// unless the batch is unknown. A panel never drops below one tile (8).
// CHECK-LABEL: func.func @forward
// ANY-LABEL: func.func @forward
func.func @forward(%x: tensor<?x2048xf32>, %s: tensor<?x64xf32>, %w: tensor<?x40960xf32>) -> tensor<?x512xf32> {
  // CHECK: kiln.linear %{{.*}} weight "a" format q4_0 {{{.*}}kiln.token_panel = 40 : i64
  %a = kiln.linear %x weight "a" format q4_0 : tensor<?x2048xf32> -> tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "b" format f16 {{{.*}}kiln.token_panel = 16 : i64
  %b = kiln.linear %x weight "b" format f16 : tensor<?x2048xf32> -> tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "c" format q8_0
  // CHECK-NOT: kiln.token_panel
  // CHECK-SAME: {{$}}
  // ANY: kiln.linear %{{.*}} weight "c" format q8_0 {{{.*}}kiln.token_panel = 1024 : i64
  %c = kiln.linear %s weight "c" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: kiln.fused_linear %{{.*}} weight "qkv" format q8_0 {{{.*}}kiln.token_panel = 40 : i64
  %q, %k, %v = kiln.fused_linear %x weight "qkv" format q8_0 : (tensor<?x2048xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
  // CHECK: kiln.linear %{{.*}} weight "d" format f32 {{{.*}}kiln.token_panel = 8 : i64
  %d = kiln.linear %w weight "d" format f32 : tensor<?x40960xf32> -> tensor<?x64xf32>
  // CHECK: kiln.logits %{{.*}} weight "output.weight" format q8_0 {{{.*}}kiln.token_panel = 40 : i64
  %l = kiln.logits %x weight "output.weight" format q8_0 : tensor<?x2048xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}

// SMALL: kiln-size-prefill-panels: cache-kib 8 is outside 16..1048576
