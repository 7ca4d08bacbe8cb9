// RUN: kiln-opt --kiln-assign-layout %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: kiln-opt --kiln-assign-layout=layout=r32 %s --split-input-file 2>&1 | FileCheck %s --check-prefix=R32
// RUN: kiln-opt --kiln-assign-layout=layout=r32 %s --split-input-file 2>/dev/null | FileCheck %s --check-prefix=R32IR
// RUN: kiln-opt --kiln-assign-layout=layout=rows64 %s --split-input-file 2>&1 | FileCheck %s --check-prefix=ROWS

// A classifier tied to the embedding table is repacked in 16-row groups when the format has
// an r16 form (q4_0, q4_1, q8_0; q4_K/q5_K/q6_K of whole super-blocks): embed reads its rows
// from them, so the table is still stored once. An r32 target gives K-quants r16 too; there
// is no r32 embed, and rows64 packs nothing, so there the others keep the embedding's rows.
// CHECK-LABEL: func.func @tied_q6_k
func.func @tied_q6_k(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tokens weight "token_embd.weight" format q6_k : tensor<?xi32> -> tensor<?x256xf32>
  // CHECK: kiln.logits %{{.*}} weight "token_embd.weight" format q6_k {{{.*}}kiln.layout = #kiln.layout<r16>
  // R32IR: kiln.logits %{{.*}} weight "token_embd.weight" format q6_k {{{.*}}kiln.layout = #kiln.layout<r16>
  %l = kiln.logits %x weight "token_embd.weight" format q6_k : tensor<?x256xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}

// -----

// CHECK-LABEL: func.func @tied_q8_0
func.func @tied_q8_0(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tokens weight "token_embd.weight" format q8_0 : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: kiln.logits %{{.*}} weight "token_embd.weight" format q8_0 {{{.*}}kiln.layout = #kiln.layout<r16>
  // R32: remark: kiln-assign-layout: 'token_embd.weight' is also read by embed, so it keeps the embedding's rows
  // ROWS: remark: kiln-assign-layout: 'token_embd.weight' is also read by embed, so it keeps the embedding's rows
  %l = kiln.logits %x weight "token_embd.weight" format q8_0 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
