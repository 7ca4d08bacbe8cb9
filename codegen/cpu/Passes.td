//===- Passes.td - CPU code generation passes ----------------*- tablegen -*-===//
#ifndef KILN_CODEGEN_CPU_PASSES_TD
#define KILN_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnLowerToUkernels : Pass<"kiln-lower-to-ukernels", "mlir::ModuleOp"> {
  let summary = "lower @forward to calls of shape-specialised micro-kernels";
  let description = [{
    Replaces `@forward` with `i32 kiln_model_forward(ctx, tokens, positions, n, logits)`
    (runtime-min/include/kiln/abi.h) in MLIR's LLVM dialect: every kiln op becomes
    `kiln.ukernel_call`s of the micro-kernels of codegen/common/ukernel_abi.h, with shapes,
    weight offsets and the memory plan's scratch and KV offsets as constants.
    Inputs are checked once up front (kiln_uk_check_inputs); linears with a
    `kiln.token_panel` loop over panels; the row-wise tail after the last attention is
    emitted twice, for all rows and for the last row alone (`last_logits_only`).

    It stores every weight the code reads in the weights section as it goes (the layout's
    formats, `kiln.layout`, `kiln.row_align`) plus the RoPE tables, so their offsets are
    known. `kiln compile` hands it the weight store; from `kiln-opt` it lays out zero
    stand-ins of each weight's shape (offsets and strides depend on shapes and formats
    only). Runs after kiln-plan-memory, whose offsets it reads.

    ```mlir
    kiln.ukernel_call @kiln_uk_linear(%ctx, %fmt, %x, %n, %in, %w, %stride, %out, %y) : ...
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def KilnConvertUkernelCalls : Pass<"kiln-convert-ukernel-calls", "mlir::ModuleOp"> {
  let summary = "kiln.ukernel_call -> llvm.call of kernels declared from their C prototypes";
  let description = [{
    Declares every kernel of ukernel_abi.h's KILN_UK_FUNCTIONS, in that order, at the top
    of the module, with the LLVM type of its C prototype (UkernelDecls.h), and rewrites each
    `kiln.ukernel_call` into an `llvm.call` of it. A call of a name the ABI does not list,
    or whose operand or result types differ from the prototype's, is an error at the call.

    ```mlir
    llvm.call @kiln_uk_linear(%ctx, %fmt, %x, %n, %in, %w, %stride, %out, %y) : ...
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // KILN_CODEGEN_CPU_PASSES_TD
