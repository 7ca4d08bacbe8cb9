//===- EmitHostCode.h - LLVM dialect -> optimised object / shared object --===//
//
// Translates the lowered module to LLVM IR, links the target's micro-kernel bitcode,
// keeps only the ABI entry exported, optimises the whole thing together (O3, so kernels
// inline with their constant shapes), emits an object with LLVM's own back end inside
// this process, and links an ELF shared object with ld.lld.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_EMITHOSTCODE_H
#define KILN_CODEGEN_CPU_EMITHOSTCODE_H

#include <cstdint>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

#include "codegen/common/TargetBackend.h"
#include "codegen/targets/HostTargets.h"

namespace kiln::codegen {

// With `embeddedWeights`, the object also defines `kiln_model_weights` (64-byte aligned,
// read-only, alone in section .rodata.kiln_weights) holding those bytes, so a static link
// needs no artifact file (--emit=obj). LLVM emits zeros there; the bytes are written over
// them in the finished object, never copied into LLVM.
// With `objectPath` and upTo == Object, the object goes straight to that file instead of
// `out.object`: with the weights embedded it is as large as the model, and LLVM already
// holds two copies of them while it emits.
// out.text is the optimised LLVM IR, out.sharedObject an ELF shared object.
bool emitHostCode(mlir::ModuleOp lowered, const CpuTarget &target, CodeStage upTo,
                  EmittedCode &out, std::string &error,
                  const std::vector<uint8_t> *embeddedWeights = nullptr,
                  const std::string &objectPath = {});

// Checks that the target's micro-kernel bitcode defines every function of
// codegen/common/ukernel_abi.h with the LLVM type the compiler declares it with (as
// emitHostCode does for the kernels a model calls). One-line error naming the first
// mismatch.
bool checkUkernelAbi(const CpuTarget &t, std::string &error);
// The same check for the kiln_uk_* declarations of an LLVM-dialect module.
bool checkUkernelDeclarations(mlir::ModuleOp declarations, const CpuTarget &t,
                              std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_EMITHOSTCODE_H
