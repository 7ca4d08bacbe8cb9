//===- CpuBackend.cpp - the CPU back end: x86-64, aarch64 NEON, Hexagon HVX ===//
//
// One TargetBackend over a CpuTarget's facts: the kernels' formats and layouts, the
// lowering to micro-kernel calls (kiln-lower-to-ukernels, kiln-convert-ukernel-calls), and
// LLVM's code generation with the target's kernel bitcode (EmitHostCode.h).
//===----------------------------------------------------------------------===//
#include <memory>

#include "mlir/Pass/PassManager.h"

#include "codegen/cpu/CpuBackend.h"
#include "codegen/cpu/EmitHostCode.h"
#include "codegen/cpu/LowerToUkernels.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "kiln/quant.h"

namespace kiln::codegen {

namespace {

class CpuBackend final : public TargetBackend {
public:
  explicit CpuBackend(const CpuTarget &t) : t(t) {}

  const std::string &name() const override { return t.name; }
  // The kernels decode every ggml format kiln reads; r16/r32 need q4_0, q4_1 or q8_0, r16
  // also takes q4_K, q5_K and q6_K (the layout pass leaves other formats in rows).
  bool supportsFormat(uint32_t format) const override {
    return kiln_ggml_block_elems(format) != 0;
  }
  // The row groups the target's kernels read: 16, or 32 for HVX's 128-byte vectors.
  std::string packedLayout() const override { return t.packRows == 32 ? "r32" : "r16"; }
  unsigned rowAlignBytes() const override { return t.rowAlignBytes; }
  // x86/, neon/ and hvx/linear_packed_kquant.h: every ISA kiln targets (K-quant rows get
  // r16 groups on HVX's r32 targets too)
  bool integerKQuants() const override {
    return t.triple.rfind("x86_64", 0) == 0 || t.triple.rfind("aarch64", 0) == 0 ||
           t.triple.rfind("hexagon", 0) == 0;
  }
  bool supportsOp(mlir::Operation *op) const override {
    return mlir::isa<EmbedOp, RmsNormOp, RmsNormalizeOp, LinearOp, FusedLinearOp, LogitsOp,
                     RopeOp, AttentionOp, SiluOp, MulOp, AddOp>(op);
  }
  CacheBudget prefillCache() const override {
    return {t.prefillCacheKib, t.prefillCacheFrom};
  }
  CacheBudget shardCache() const override { return {t.shardCacheKib, t.shardCacheFrom}; }

  void addLoweringPasses(mlir::OpPassManager &pm, LoweringWeights &weights) const override {
    pm.addPass(createKilnLowerToUkernels(weights));
    pm.addPass(createKilnConvertUkernelCalls());
  }

  bool emitCode(mlir::ModuleOp lowered, CodeStage stage, EmittedCode &out, std::string &error,
                const std::vector<uint8_t> *embeddedWeights,
                const std::string &objectPath) const override {
    return emitHostCode(lowered, t, stage, out, error, embeddedWeights, objectPath);
  }

  ArtifactTargetRecord artifactTarget() const override {
    return {t.name, t.triple, t.cpu, t.requiredFeatures, t.governorDefaults};
  }

private:
  const CpuTarget &t; // lives as long as the program (HostTargets.h, ChipTargets.h)
};

} // namespace

std::unique_ptr<TargetBackend> createCpuBackend(const CpuTarget &target) {
  return std::make_unique<CpuBackend>(target);
}

} // namespace kiln::codegen
