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

#include "codegen/targets/HostTargets.h"

namespace kiln::codegen {

struct HostCode {
  std::string llvmIr;                 // optimised IR (filled when asked for)
  std::vector<uint8_t> object;        // relocatable ELF object (unless written to a file)
  uint64_t objectSize = 0;            // its size in bytes, also when written to a file
  std::vector<uint8_t> sharedObject;  // linked ELF shared object (when asked for)
};

enum class HostStage { LlvmIr, Object, SharedObject };

// With `embeddedWeights`, the object also defines `kiln_model_weights` (64-byte aligned,
// read-only, alone in section .rodata.kiln_weights) holding those bytes, so a static link
// needs no artifact file (--emit=obj). LLVM emits zeros there; the bytes are written over
// them in the finished object, never copied into LLVM.
// With `objectPath` and upTo == Object, the object goes straight to that file instead of
// `out.object`: with the weights embedded it is as large as the model, and LLVM already
// holds two copies of them while it emits.
bool emitHostCode(mlir::ModuleOp lowered, const HostTarget &target, HostStage upTo,
                  HostCode &out, std::string &error,
                  const std::vector<uint8_t> *embeddedWeights = nullptr,
                  const std::string &objectPath = {});

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_EMITHOSTCODE_H
