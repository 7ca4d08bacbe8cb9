//===- ConvertUkernelCalls.cpp - kiln.ukernel_call -> llvm.call -----------===//
//
// The second half of the CPU lowering: the kernels are declared once from their C
// prototypes (UkernelDecls.h), every call is checked against its kernel's type, then a
// conversion pattern rewrites it into llvm.call. A prototype edited in ukernel_abi.h thus
// fails here, at the call, instead of as an LLVM verifier error after it.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/LowerToUkernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"

#include "codegen/cpu/UkernelDecls.h"
#include "dialects/kiln/IR/KilnOps.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_KILNCONVERTUKERNELCALLS
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {

namespace {

// Why call does not match the kernel's type, empty when it does.
std::string mismatch(UkernelCallOp call, LLVM::LLVMFunctionType kernel) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (call.getArgs().size() != kernel.getNumParams()) {
    os << "passes " << call.getArgs().size() << " operands to a kernel of "
       << kernel.getNumParams();
    return out;
  }
  for (auto [i, arg] : llvm::enumerate(call.getArgs()))
    if (arg.getType() != kernel.getParamType(unsigned(i))) {
      os << "operand " << i << " is '" << arg.getType() << "', the prototype's '"
         << kernel.getParamType(unsigned(i)) << "'";
      return out;
    }
  const Type returns = kernel.getReturnType();
  if (!call.getResult() && !isa<LLVM::LLVMVoidType>(returns))
    os << "drops the prototype's '" << returns << "' result";
  else if (call.getResult() && call.getResult().getType() != returns)
    os << "expects '" << call.getResult().getType() << "' back, the prototype returns '"
       << returns << "'";
  return out;
}

struct UkernelCallToLlvm : OpConversionPattern<UkernelCallOp> {
  UkernelCallToLlvm(MLIRContext *ctx, const llvm::StringMap<LLVM::LLVMFuncOp> &kernels)
      : OpConversionPattern(ctx), kernels(kernels) {}

  LogicalResult matchAndRewrite(UkernelCallOp call, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::CallOp>(call, kernels.lookup(call.getCallee()),
                                              adaptor.getArgs());
    return success();
  }

  const llvm::StringMap<LLVM::LLVMFuncOp> &kernels;
};

struct KilnConvertUkernelCallsPass
    : impl::KilnConvertUkernelCallsBase<KilnConvertUkernelCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    llvm::StringMap<LLVM::LLVMFuncOp> kernels;
    forEachUkernel(ctx, [&](const char *name, LLVM::LLVMFunctionType type) {
      kernels[name] = b.create<LLVM::LLVMFuncOp>(module.getLoc(), name, type);
    });
    const WalkResult checked = module.walk([&](UkernelCallOp call) {
      auto kernel = kernels.find(call.getCallee());
      if (kernel == kernels.end()) {
        call.emitOpError() << "calls '" << call.getCallee()
                           << "', which ukernel_abi.h's KILN_UK_FUNCTIONS does not list";
        return WalkResult::interrupt();
      }
      if (std::string why = mismatch(call, kernel->second.getFunctionType()); !why.empty()) {
        call.emitOpError() << "'" << call.getCallee() << "' " << why;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();
    ConversionTarget target(*ctx);
    target.addLegalDialect<LLVM::LLVMDialect>();
    target.addIllegalOp<UkernelCallOp>();
    RewritePatternSet patterns(ctx);
    patterns.add<UkernelCallToLlvm>(ctx, kernels);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

} // namespace kiln::codegen
