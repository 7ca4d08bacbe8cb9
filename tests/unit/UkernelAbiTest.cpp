// The micro-kernel ABI declared once: for every target's embedded kernel bitcode, each
// function of codegen/common/ukernel_abi.h (KILN_UK_FUNCTIONS) is defined with the LLVM
// type the compiler declares from its C prototype (codegen/cpu/UkernelDecls.h).
#include <gtest/gtest.h>

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "codegen/cpu/EmitHostCode.h"
#include "codegen/targets/ChipRegistry.h"
#include "codegen/targets/TargetResolver.h"

namespace {

TEST(UkernelAbi, EveryTargetsBitcodeMatchesThePrototypes) {
  std::vector<std::string> names = kiln::codegen::hostTargetNames();
  for (const kiln::codegen::BuiltinProfile &b : kiln::codegen::builtinProfiles())
    for (const std::string &e : b.profile.engines())
      names.push_back(b.profile.name + ":" + e);
  int checked = 0;
  for (const std::string &name : names) {
    std::string error;
    const kiln::codegen::CpuTarget *t = kiln::codegen::findCodegenTarget(name, error);
    if (!t) // e.g. "host" on a machine that runs none of the levels
      continue;
    EXPECT_TRUE(kiln::codegen::checkUkernelAbi(*t, error)) << name << ": " << error;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

// The check can fail: kiln_uk_silu declared with an i32 count where the kernel takes int64_t,
// and a kernel no bitcode defines.
TEST(UkernelAbi, MismatchedDeclarationIsAnError) {
  std::string error;
  const kiln::codegen::CpuTarget *t = kiln::codegen::findCodegenTarget("x86-64-v3", error);
  ASSERT_NE(t, nullptr) << error;
  mlir::MLIRContext ctx;
  ctx.getOrLoadDialect<mlir::LLVM::LLVMDialect>();
  mlir::OpBuilder b(&ctx);
  auto ptr = mlir::LLVM::LLVMPointerType::get(&ctx);
  auto declare = [&](const char *name, mlir::Type count) {
    mlir::OwningOpRef<mlir::ModuleOp> m = mlir::ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(m->getBody());
    b.create<mlir::LLVM::LLVMFuncOp>(
        b.getUnknownLoc(), name,
        mlir::LLVM::LLVMFunctionType::get(mlir::LLVM::LLVMVoidType::get(&ctx),
                                          {ptr, count, ptr}));
    return m;
  };
  EXPECT_TRUE(kiln::codegen::checkUkernelDeclarations(
      *declare("kiln_uk_silu", b.getI64Type()), *t, error))
      << error;
  EXPECT_FALSE(kiln::codegen::checkUkernelDeclarations(
      *declare("kiln_uk_silu", b.getI32Type()), *t, error));
  EXPECT_NE(error.find("micro-kernel ABI mismatch for x86-64-v3: kiln_uk_silu is declared "
                       "void (ptr, i32, ptr)"),
            std::string::npos)
      << error;
  EXPECT_FALSE(kiln::codegen::checkUkernelDeclarations(
      *declare("kiln_uk_no_such_kernel", b.getI64Type()), *t, error));
  EXPECT_NE(error.find("do not define kiln_uk_no_such_kernel"), std::string::npos) << error;
}

} // namespace
