// RUN: kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8" %s | FileCheck %s
// RUN: kiln-opt --kiln-plan-memory="max-ctx=64 max-batch=8 kv=k=int8,v=f16" %s | FileCheck %s --check-prefix=KV8

// A one-layer model, dim 64, 4 heads of 16 over 2 KV heads. Results are [8 tokens, w]
// f32 (w * 32 bytes); the r16 linear quantises its input into a workspace of
// 8 * kiln_packed_act_stride(64) bytes; attention's scores are 4 heads * 64 positions * 4.
// Totals: K and V of 64 positions * 2 KV heads * 16 floats; scratch reused by live range
// (9216 bytes where 12288 without reuse).
// CHECK: kiln.memory_plan = {kv_bytes = 16384 : i64, kv_bytes_per_token = 256 : i64, kv_k = 0 : i64, kv_v = 0 : i64, max_batch = 8 : i64, max_ctx = 64 : i64, scratch_bytes = 9216 : i64, scratch_bytes_without_reuse = 12288 : i64}
// int8 K (one f32 scale per token and KV head) and f16 V.
// KV8: kv_bytes = 6656 : i64, kv_bytes_per_token = 104 : i64, kv_k = 24 : i64, kv_v = 1 : i64
module attributes {kiln.vocab_size = 32 : i32} {
// CHECK-LABEL: func.func @forward
func.func @forward(%tok: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x32xf32> {
  // CHECK: kiln.embed {{.*}}kiln.buffers = array<i64: [[X:[0-9]+]]>
  %x = kiln.embed %tok weight "tok" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: kiln.rms_norm {{.*}}kiln.buffers = array<i64: [[N:[0-9]+]]>
  %n = kiln.rms_norm %x weight "n0" eps 1.0e-05 : tensor<?x64xf32>
  // CHECK: kiln.linear {{.*}}weight "q"{{.*}}kiln.buffers = array<i64: [[Q:[0-9]+]]>, kiln.layout = #kiln.layout<r16>, kiln.workspace = {{[0-9]+}} : i64
  %q = kiln.linear %n weight "q" format q8_0 {kiln.layout = #kiln.layout<r16>} : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: kiln.linear {{.*}}weight "k"{{.*}}kiln.buffers = array<i64: [[K:[0-9]+]]>}
  %k = kiln.linear %n weight "k" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  %v = kiln.linear %n weight "v" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  // A rope rotates in place: its result is its input's buffer.
  // CHECK: kiln.rope {{.*}}kiln.buffers = array<i64: [[Q]]>
  %qr = kiln.rope %q, %pos head_dim 16 rotary_dims 16 theta 1.0e+04 style adjacent : tensor<?x64xf32>, tensor<?xi32>
  // CHECK: kiln.rope {{.*}}kiln.buffers = array<i64: [[K]]>
  %kr = kiln.rope %k, %pos head_dim 16 rotary_dims 16 theta 1.0e+04 style adjacent : tensor<?x32xf32>, tensor<?xi32>
  // K and V planes: 64 positions * 2 KV heads * 16 * 4 bytes = 8192 each.
  // CHECK: kiln.attention {{.*}}kiln.buffers = array<i64: {{[0-9]+}}>, kiln.kv_slots = array<i64: 0, 0, 8192>, kiln.workspace = {{[0-9]+}} : i64
  // KV8: kiln.attention {{.*}}kiln.kv_slots = array<i64: 0, 2048, 2560>
  %a = kiln.attention %qr, %kr, %v, %pos layer 0 heads 4 kv_heads 2 head_dim 16 scale 0.25 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  // The residual's last reader writes the sum into the residual's own buffer.
  // CHECK: kiln.fused_linear {{.*}}kiln.buffers = array<i64: [[X]]>
  %h = kiln.fused_linear %a residual %x weight "o" format f32 : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  // The logits go to the caller's buffer: no scratch.
  // CHECK: kiln.logits
  // CHECK-NOT: kiln.buffers
  // CHECK-SAME: {{$}}
  %l = kiln.logits %h weight "tok" format f32 : tensor<?x64xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}
