//===- VulkanBackend.cpp - a CPU target plus a Vulkan GPU program ----------===//
#include "codegen/vulkan/VulkanBackend.h"

#include "mlir/Pass/PassManager.h"

#include "codegen/common/LoweringWeights.h"
#include "codegen/vulkan/GpuProgram.h"
#include "codegen/vulkan/LowerToDispatches.h"
#include "dialects/kiln/IR/KilnOps.h"
#include "kiln/quant.h"

namespace kiln::codegen {
namespace {

class VulkanBackend final : public TargetBackend {
public:
  VulkanBackend(std::unique_ptr<TargetBackend> cpu, const std::string &name)
      : cpu(std::move(cpu)), fullName(name),
        program(std::make_unique<vulkan::GpuProgram>()) {}

  const std::string &name() const override { return fullName; }
  // Formats both the CPU code and codegen/vulkan/kernels read.
  bool supportsFormat(uint32_t f) const override {
    return cpu->supportsFormat(f) && (f == KILN_GGML_TYPE_F32 || f == KILN_GGML_TYPE_F16 ||
                                      f == KILN_GGML_TYPE_Q8_0 || f == KILN_GGML_TYPE_Q4_0 ||
                                      f == KILN_GGML_TYPE_Q4_1 || f == KILN_GGML_TYPE_Q4_K ||
                                      f == KILN_GGML_TYPE_Q5_K || f == KILN_GGML_TYPE_Q6_K);
  }
  // The kernels read K-quants in ggml's block rows: `--precision source` keeps a Q4_K_M
  // file's q4_K/q5_K/q6_K as the file stores them.
  bool readsKQuantBlockRows() const override { return true; }
  // The GPU kernels read ggml's block rows, so the CPU code reads them too: each weight is
  // stored once.
  std::string packedLayout() const override { return "rows64"; }
  unsigned rowAlignBytes() const override { return cpu->rowAlignBytes(); }
  bool supportsOp(mlir::Operation *op) const override {
    return cpu->supportsOp(op) && mlir::isa<EmbedOp, RmsNormOp, RmsNormalizeOp, LinearOp,
                                            LogitsOp, RopeOp, AttentionOp, SiluOp, MulOp,
                                            AddOp>(op);
  }
  CacheBudget prefillCache() const override { return cpu->prefillCache(); }
  CacheBudget shardCache() const override { return {}; }

  // The dispatches first (the module is left as it is), then the CPU's lowering, which
  // lays the weights section out.
  void addLoweringPasses(mlir::OpPassManager &pm, LoweringWeights &w) const override {
    pm.addPass(vulkan::createLowerToVulkanDispatches(program.get(), vulkan::kMaxBindingBytes,
                                                     cpu->rowAlignBytes()));
    w.opEntries = true; // the ops a device lacks run on the CPU, one at a time
    cpu->addLoweringPasses(pm, w);
    weights = &w;
  }

  bool emitCode(mlir::ModuleOp lowered, CodeStage stage, EmittedCode &out, std::string &error,
                const std::vector<uint8_t> *embeddedWeights,
                const std::string &objectPath) const override {
    if (!cpu->emitCode(lowered, stage, out, error, embeddedWeights, objectPath))
      return false;
    if (stage != CodeStage::SharedObject)
      return true;
    if (!weights || program->dispatches.empty()) {
      error = "internal error: no Vulkan program was lowered";
      return false;
    }
    const WeightLayout &layout = weights->layout;
    return vulkan::serialize(
        *program,
        [&](const std::string &name) -> std::optional<vulkan::StoredWeight> {
          const PackedTensor *t = layout.find(name);
          if (!t)
            return std::nullopt;
          return vulkan::StoredWeight{t->offset, t->rowStride, t->size, t->format};
        },
        out.gpuProgram, error);
  }

  ArtifactTargetRecord artifactTarget() const override {
    ArtifactTargetRecord r = cpu->artifactTarget();
    r.name = fullName;
    return r;
  }

private:
  std::unique_ptr<TargetBackend> cpu;
  std::string fullName;
  std::unique_ptr<vulkan::GpuProgram> program; // filled by the lowering pass
  mutable LoweringWeights *weights = nullptr;   // the CPU lowering's layout
};

} // namespace

std::unique_ptr<TargetBackend> createVulkanBackend(std::unique_ptr<TargetBackend> cpu,
                                                   const std::string &name) {
  return std::make_unique<VulkanBackend>(std::move(cpu), name);
}

} // namespace kiln::codegen
