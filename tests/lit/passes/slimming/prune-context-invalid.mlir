// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-prune-context)' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ZERO
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-prune-context{max-ctx=0})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ZERO
// RUN: not kiln-opt %s --pass-pipeline='builtin.module(kiln-prune-context{max-ctx=4294967295})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE
// RUN: kiln-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(kiln-prune-context{max-ctx=64})'

// ZERO: error: kiln-prune-context: max-ctx must be in [1, 16777216], got 0
// HUGE: error: kiln-prune-context: max-ctx must be in [1, 16777216], got 4294967295

// Without a declared context there is nothing to compare the cap with.
// expected-error @below {{kiln-prune-context: the module has no kiln.context_length to compare the cap with}}
module {
  func.func @forward(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
    return %x : tensor<?x64xf32>
  }
}
