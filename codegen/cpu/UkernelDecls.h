//===- UkernelDecls.h - LLVM dialect declarations of the micro-kernel ABI -===//
//
// The compiler's declarations of the kernels come from their C prototypes
// (codegen/common/ukernel_abi.h, KILN_UK_FUNCTIONS) through the C types themselves, so a
// prototype changed in the header changes the declaration with it: pointers become `ptr`,
// 32/64-bit integers i32/i64, float f32, void the LLVM void type. A C type with no rule
// here fails to compile.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_UKERNELDECLS_H
#define KILN_CODEGEN_CPU_UKERNELDECLS_H

#include <cstdint>
#include <type_traits>

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"

#include "codegen/common/ukernel_abi.h"

namespace kiln::codegen {

template <typename T> mlir::Type llvmTypeOf(mlir::MLIRContext *ctx) {
  if constexpr (std::is_pointer_v<T>)
    return mlir::LLVM::LLVMPointerType::get(ctx);
  else if constexpr (std::is_void_v<T>)
    return mlir::LLVM::LLVMVoidType::get(ctx);
  else if constexpr (std::is_same_v<T, float>)
    return mlir::Float32Type::get(ctx);
  else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>)
    return mlir::IntegerType::get(ctx, 32);
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>)
    return mlir::IntegerType::get(ctx, 64);
  else
    static_assert(sizeof(T) == 0, "a micro-kernel argument type with no LLVM type rule");
}

template <typename R, typename... Args>
mlir::LLVM::LLVMFunctionType llvmFunctionTypeOf(R (*)(Args...), mlir::MLIRContext *ctx) {
  return mlir::LLVM::LLVMFunctionType::get(llvmTypeOf<R>(ctx), {llvmTypeOf<Args>(ctx)...});
}

// Calls fn(name, type) for every ABI function, in KILN_UK_FUNCTIONS order. Only the
// prototypes' types are used (a null pointer of each): the compiler links no kernel.
template <typename Fn> void forEachUkernel(mlir::MLIRContext *ctx, Fn &&fn) {
#define KILN_UK_DECLARE(name) fn(#name, llvmFunctionTypeOf(decltype (&name)(nullptr), ctx));
  KILN_UK_FUNCTIONS(KILN_UK_DECLARE)
#undef KILN_UK_DECLARE
}

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_UKERNELDECLS_H
