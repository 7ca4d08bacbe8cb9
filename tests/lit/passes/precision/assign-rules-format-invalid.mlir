// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=attn_z=q4_0})' 2>&1 | FileCheck %s --check-prefix=CLASS
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=ffn=q3_k})' 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=norms=q8_0})' 2>&1 | FileCheck %s --check-prefix=NORM
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=ffn})' 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-assign-rules-format{rules=embedding=q4_0,output=q8_0})' 2>&1 | FileCheck %s --check-prefix=TIED

// CLASS: unknown tensor class 'attn_z' (expected attn_q, attn_k, attn_v, attn_qkv,
// FORMAT: unknown format 'q3_k' in rule 'ffn=q3_k' (expected f32, f16, q8_0 (int8), q6_k, q5_k, q4_k, q4_0 (int4), q4_1 (int4m) or q3_0 (int3))
// NORM: norms can be f32 or f16, not q8_0
// SHAPE: precision rule 'ffn' is not class=format
// TIED: weight 'token_embd.weight' is read as embedding (q4_0) and as output (q8_0); a tied weight needs one format
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tokens weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %l = kiln.logits %x weight "token_embd.weight" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
