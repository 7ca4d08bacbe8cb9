// RUN: kiln-opt --kiln-rotate-residual=seed=7 %s | FileCheck %s

// One Llama block: the embedding table stores E Q^T, the norms lose their scales to the
// linears that read them, which read W diag(g) Q^T; the attention output and FFN down
// (and down's bias) write Q W. Every rotated weight is f32 (precision rounds it later).
// CHECK: kiln.derived_weights = {
// CHECK-DAG: "blk.0.attn_q.weight.fold(blk.0.attn_norm.weight)" = {by = "blk.0.attn_norm.weight", op = "scale_cols", source = "blk.0.attn_q.weight"}
// CHECK-DAG: "blk.0.attn_q.weight:rotated" = {op = "rotate_rows", seed = 7 : i64, source = "blk.0.attn_q.weight.fold(blk.0.attn_norm.weight)"}
// CHECK-DAG: "blk.0.attn_output.weight:rotated" = {op = "rotate_cols", seed = 7 : i64, source = "blk.0.attn_output.weight"}
// CHECK-DAG: "blk.0.ffn_down.weight:rotated" = {op = "rotate_cols", seed = 7 : i64, source = "blk.0.ffn_down.weight"}
// CHECK-DAG: "blk.0.ffn_down.bias:rotated" = {op = "rotate_rows", seed = 7 : i64, source = "blk.0.ffn_down.bias"}
// CHECK-DAG: "output.weight:rotated" = {op = "rotate_rows", seed = 7 : i64, source = "output.weight.fold(output_norm.weight)"}
// CHECK-DAG: "token_embd.weight:rotated" = {op = "rotate_rows", seed = 7 : i64, source = "token_embd.weight"}
// CHECK-LABEL: func.func @forward
// CHECK: kiln.embed %{{.*}} weight "token_embd.weight:rotated" format f32
// CHECK: %[[N:.*]] = kiln.rms_normalize
// CHECK-NOT: kiln.rms_norm
// CHECK: kiln.linear %[[N]] weight "blk.0.attn_q.weight:rotated" format f32
// CHECK: kiln.linear %{{.*}} weight "blk.0.attn_output.weight:rotated" format f32
// CHECK: kiln.linear %{{.*}} weight "blk.0.ffn_up.weight:rotated" format f32
// CHECK: kiln.linear %{{.*}} weight "blk.0.ffn_down.weight:rotated" bias "blk.0.ffn_down.bias:rotated" format f32
// CHECK: kiln.logits %{{.*}} weight "output.weight:rotated" format f32
func.func @forward(%tok: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tok weight "token_embd.weight" format q8_0 : tensor<?xi32> -> tensor<?x64xf32>
  %n = kiln.rms_norm %x weight "blk.0.attn_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  %q = kiln.linear %n weight "blk.0.attn_q.weight" format q4_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  %o = kiln.linear %q weight "blk.0.attn_output.weight" format f32 : tensor<?x64xf32> -> tensor<?x64xf32>
  %h = kiln.add %x, %o : tensor<?x64xf32>
  %m = kiln.rms_norm %h weight "blk.0.ffn_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  %u = kiln.linear %m weight "blk.0.ffn_up.weight" format f32 : tensor<?x64xf32> -> tensor<?x172xf32>
  %d = kiln.linear %u weight "blk.0.ffn_down.weight" bias "blk.0.ffn_down.bias" format f32 : tensor<?x172xf32> -> tensor<?x64xf32>
  %h2 = kiln.add %h, %d : tensor<?x64xf32>
  %f = kiln.rms_norm %h2 weight "output_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  %l = kiln.logits %f weight "output.weight" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
