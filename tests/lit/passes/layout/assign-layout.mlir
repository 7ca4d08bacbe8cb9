// RUN: kiln-opt --kiln-assign-layout %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: kiln-opt --kiln-assign-layout=layout=rows64 %s --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=ROWS
// RUN: kiln-opt --kiln-assign-layout=row-align=128 %s --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=ALIGN
// RUN: kiln-opt --kiln-assign-layout=layout=r32 %s --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=R32

// Block formats the integer kernels read are repacked (r16), other formats get 64-byte
// rows; with layout=rows64 nothing is repacked; layout=r32 (HVX's groups) packs the same
// ops in 32-row groups. Embed and norms get no layout (a tied table: assign-layout-tied.mlir).
// CHECK-LABEL: func.func @forward
// ROWS-LABEL: func.func @forward
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  // CHECK: kiln.embed
  // CHECK-NOT: kiln.layout
  %x = kiln.embed %tokens weight "token_embd.weight" format q8_0 : tensor<?xi32> -> tensor<?x64xf32>
  %h = kiln.rms_norm %x weight "n" eps 1.0e-05 : tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "a" format q4_0 {{{.*}}kiln.layout = #kiln.layout<r16>
  // ROWS: kiln.linear %{{.*}} weight "a" format q4_0 {{{.*}}kiln.layout = #kiln.layout<rows64>
  // R32: kiln.linear %{{.*}} weight "a" format q4_0 {{{.*}}kiln.layout = #kiln.layout<r32>
  %a = kiln.linear %h weight "a" format q4_0 : tensor<?x64xf32> -> tensor<?x172xf32>
  // The 172-wide input rows are still packed: the layout pads them to whole blocks.
  // CHECK: kiln.linear %{{.*}} weight "b" format q4_1 {{{.*}}kiln.layout = #kiln.layout<r16>
  // R32: kiln.linear %{{.*}} weight "b" format q4_1 {{{.*}}kiln.layout = #kiln.layout<r32>
  %b = kiln.linear %a weight "b" format q4_1 : tensor<?x172xf32> -> tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "c" format q8_0 {{{.*}}kiln.layout = #kiln.layout<r16>
  // R32: kiln.linear %{{.*}} weight "c" format q8_0 {{{.*}}kiln.layout = #kiln.layout<r32>
  %c = kiln.linear %b weight "c" format q8_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: kiln.linear %{{.*}} weight "d" format f16 {{{.*}}kiln.layout = #kiln.layout<rows64>, kiln.row_align = 64 : i64
  // ALIGN: kiln.linear %{{.*}} weight "d" format f16 {{{.*}}kiln.layout = #kiln.layout<rows64>, kiln.row_align = 128 : i64
  // ROWS: kiln.linear %{{.*}} weight "d" format f16 {{{.*}}kiln.layout = #kiln.layout<rows64>
  // R32: kiln.linear %{{.*}} weight "d" format f16 {{{.*}}kiln.layout = #kiln.layout<rows64>
  %d = kiln.linear %c weight "d" format f16 : tensor<?x64xf32> -> tensor<?x64xf32>
  // q3_0 has no r16 form and keeps rows of whole 14-byte blocks in either mode.
  // CHECK: kiln.linear %{{.*}} weight "e" format q3_0 {{{.*}}kiln.layout = #kiln.layout<block>
  // ROWS: kiln.linear %{{.*}} weight "e" format q3_0 {{{.*}}kiln.layout = #kiln.layout<block>
  // R32: kiln.linear %{{.*}} weight "e" format q3_0 {{{.*}}kiln.layout = #kiln.layout<block>
  %e = kiln.linear %d weight "e" format q3_0 : tensor<?x64xf32> -> tensor<?x64xf32>
  // So do ggml's K-quants on rows that are not whole 256-element super-blocks (aligned rows
  // would outgrow the file's bytes).
  // CHECK: kiln.linear %{{.*}} weight "k4" format q4_k {{{.*}}kiln.layout = #kiln.layout<block>
  // ROWS: kiln.linear %{{.*}} weight "k4" format q4_k {{{.*}}kiln.layout = #kiln.layout<block>
  // R32: kiln.linear %{{.*}} weight "k6" format q6_k {{{.*}}kiln.layout = #kiln.layout<block>
  %k4 = kiln.linear %e weight "k4" format q4_k : tensor<?x64xf32> -> tensor<?x64xf32>
  %k6 = kiln.linear %k4 weight "k6" format q6_k : tensor<?x64xf32> -> tensor<?x256xf32>
  // Rows of whole super-blocks: q4_K, q5_K and q6_K are repacked in 16-row groups, with
  // layout=r32 too (they have no r32 form).
  // CHECK: kiln.linear %{{.*}} weight "s4" format q4_k {{{.*}}kiln.layout = #kiln.layout<r16>
  // ROWS: kiln.linear %{{.*}} weight "s4" format q4_k {{{.*}}kiln.layout = #kiln.layout<block>
  // R32: kiln.linear %{{.*}} weight "s4" format q4_k {{{.*}}kiln.layout = #kiln.layout<r16>
  %s4 = kiln.linear %k6 weight "s4" format q4_k : tensor<?x256xf32> -> tensor<?x256xf32>
  // CHECK: kiln.linear %{{.*}} weight "s6" format q6_k {{{.*}}kiln.layout = #kiln.layout<r16>
  // R32: kiln.linear %{{.*}} weight "s6" format q6_k {{{.*}}kiln.layout = #kiln.layout<r16>
  %s6 = kiln.linear %s4 weight "s6" format q6_k : tensor<?x256xf32> -> tensor<?x256xf32>
  // CHECK: kiln.linear %{{.*}} weight "s5" format q5_k {{{.*}}kiln.layout = #kiln.layout<r16>
  // R32: kiln.linear %{{.*}} weight "s5" format q5_k {{{.*}}kiln.layout = #kiln.layout<r16>
  %s5 = kiln.linear %s6 weight "s5" format q5_k : tensor<?x256xf32> -> tensor<?x64xf32>
  // CHECK: kiln.logits %{{.*}} weight "output.weight" format q8_0 {{{.*}}kiln.layout = #kiln.layout<r16>
  // R32: kiln.logits %{{.*}} weight "output.weight" format q8_0 {{{.*}}kiln.layout = #kiln.layout<r32>
  %l = kiln.logits %s5 weight "output.weight" format q8_0 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
