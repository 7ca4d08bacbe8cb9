// RUN: kiln-opt --kiln-convert-ukernel-calls %s | FileCheck %s

// Every kernel of ukernel_abi.h is declared first, in KILN_UK_FUNCTIONS order, from its C
// prototype; each kiln.ukernel_call becomes an llvm.call of it, its result kept.
// CHECK: llvm.func @kiln_uk_check_inputs(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
// CHECK: llvm.func @kiln_uk_embed(
// CHECK: llvm.func @kiln_uk_silu(!llvm.ptr, i64, !llvm.ptr)
// CHECK-LABEL: llvm.func @f(
// CHECK: %[[OK:.*]] = llvm.call @kiln_uk_check_inputs(%arg0, %arg0, %arg1, %arg1, %arg1, %arg1) : (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
// CHECK: llvm.call @kiln_uk_silu(%arg0, %arg2, %arg0) : (!llvm.ptr, i64, !llvm.ptr) -> ()
// CHECK: llvm.return %[[OK]]
// CHECK-NOT: kiln.
llvm.func @f(%p: !llvm.ptr, %n: i32, %count: i64) -> i32 {
  %ok = kiln.ukernel_call @kiln_uk_check_inputs(%p, %p, %n, %n, %n, %n) : (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
  kiln.ukernel_call @kiln_uk_silu(%p, %count, %p) : (!llvm.ptr, i64, !llvm.ptr) -> ()
  llvm.return %ok : i32
}
