// RUN: kiln-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-layers{layers=1})'
// RUN: not kiln-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-layers{layers=2})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// RUN: not kiln-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-layers{layers=-1})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEGATIVE
// RUN: not kiln-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-layers{layers=0,1})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ALL
// RUN: not kiln-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-layers{layers=0,0})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TWICE

// MISSING: error: kiln-prune-layers: layer 2 does not exist (the model has layers 0+1)
// NEGATIVE: error: kiln-prune-layers: layer -1 does not exist (the model has layers 0+1)
// ALL: error: kiln-prune-layers: cannot remove all 2 layers; at least one must remain
// TWICE: error: kiln-prune-layers: layer 0 is listed twice

// A layer whose values are used past its residual output is not a removable block.
module attributes {kiln.context_length = 32 : i32} {
  func.func @forward(%arg0: tensor<?xi32>, %arg1: tensor<?xi32>) -> tensor<?x260xf32> {
    %0 = kiln.embed %arg0 weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x16xf32>
    %1 = kiln.rms_norm %0 weight "blk.0.norm.weight" eps 9.99999974E-6 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    %2 = kiln.add %0, %1 {kiln.layer = 0 : i32} : tensor<?x16xf32>
    // expected-error @+1 {{kiln-prune-layers: layer 1 has 1 activation inputs and 2 outputs; only a layer with one residual stream in and out can be removed}}
    %3 = kiln.rms_norm %2 weight "blk.1.norm.weight" eps 9.99999974E-6 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %4 = kiln.add %2, %3 {kiln.layer = 1 : i32} : tensor<?x16xf32>
    %5 = kiln.add %3, %4 : tensor<?x16xf32>
    %6 = kiln.rms_norm %5 weight "output_norm.weight" eps 9.99999974E-6 : tensor<?x16xf32>
    %7 = kiln.logits %6 weight "output.weight" format f32 : tensor<?x16xf32> -> tensor<?x260xf32>
    return %7 : tensor<?x260xf32>
  }
}

// -----

// Nothing to prune without @forward.
// expected-error @below {{kiln-prune-layers: the module has no @forward}}
module {
  func.func @other(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
    return %x : tensor<?x16xf32>
  }
}
