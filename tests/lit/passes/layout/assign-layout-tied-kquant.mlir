// RUN: kiln-opt --kiln-assign-layout %s --verify-diagnostics | FileCheck %s
// RUN: kiln-opt --kiln-assign-layout=layout=r32 %s 2>&1 | FileCheck %s --check-prefix=R32

// A classifier tied to a q4_K/q6_K table of whole super-blocks is repacked in 16-row groups
// (embed reads its rows from them, so the table is still stored once); there is no r32 form,
// so in r32 it keeps the embedding's rows.
// CHECK-LABEL: func.func @tied_q6_k
func.func @tied_q6_k(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tokens weight "token_embd.weight" format q6_k : tensor<?xi32> -> tensor<?x256xf32>
  // CHECK: kiln.logits %{{.*}} weight "token_embd.weight" format q6_k {{{.*}}kiln.layout = "r16"
  // R32: remark: kiln-assign-layout: 'token_embd.weight' is also read by embed, so it keeps the embedding's rows
  %l = kiln.logits %x weight "token_embd.weight" format q6_k : tensor<?x256xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
