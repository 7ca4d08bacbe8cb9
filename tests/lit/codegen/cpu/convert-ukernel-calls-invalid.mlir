// RUN: kiln-opt --kiln-convert-ukernel-calls --split-input-file --verify-diagnostics %s

// A kernel the ABI does not list.
llvm.func @f(%p: !llvm.ptr, %count: i64) {
  // expected-error @+1 {{calls 'kiln_uk_gelu', which ukernel_abi.h's KILN_UK_FUNCTIONS does not list}}
  kiln.ukernel_call @kiln_uk_gelu(%p, %count, %p) : (!llvm.ptr, i64, !llvm.ptr) -> ()
  llvm.return
}

// -----

// One operand short of the prototype.
llvm.func @f(%p: !llvm.ptr, %count: i64) {
  // expected-error @+1 {{'kiln_uk_silu' passes 2 operands to a kernel of 3}}
  kiln.ukernel_call @kiln_uk_silu(%p, %count) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// -----

// An element count as i32 where the prototype takes int64_t.
llvm.func @f(%p: !llvm.ptr, %count: i32) {
  // expected-error @+1 {{'kiln_uk_silu' operand 1 is 'i32', the prototype's 'i64'}}
  kiln.ukernel_call @kiln_uk_silu(%p, %count, %p) : (!llvm.ptr, i32, !llvm.ptr) -> ()
  llvm.return
}

// -----

// The input check's status dropped.
llvm.func @f(%p: !llvm.ptr, %n: i32) {
  // expected-error @+1 {{'kiln_uk_check_inputs' drops the prototype's 'i32' result}}
  kiln.ukernel_call @kiln_uk_check_inputs(%p, %p, %n, %n, %n, %n) : (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> ()
  llvm.return
}

// -----

// A result asked of a void kernel.
llvm.func @f(%p: !llvm.ptr, %count: i64) {
  // expected-error @+1 {{'kiln_uk_silu' expects 'i32' back, the prototype returns '!llvm.void'}}
  %r = kiln.ukernel_call @kiln_uk_silu(%p, %count, %p) : (!llvm.ptr, i64, !llvm.ptr) -> i32
  llvm.return
}
