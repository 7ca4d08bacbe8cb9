//===- PruneContext.cpp - cap the context the compiled model holds --------===//
//
// Sets kiln.max_ctx; the code generator sizes the KV cache, the RoPE tables and the
// memory plan from it. Reports the bytes that saves against the declared context.
//===----------------------------------------------------------------------===//
#include "passes/slimming/Passes.h"

#include "mlir/IR/Builders.h"

#include "dialects/kiln/IR/KilnOps.h"
#include "passes/slimming/SlimmingUtils.h"

#define DEBUG_TYPE "kiln-prune-context"

namespace kiln {
#define GEN_PASS_DEF_KILNPRUNECONTEXT
#include "passes/slimming/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct PruneContext : public impl::KilnPruneContextBase<PruneContext> {
  using KilnPruneContextBase::KilnPruneContextBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (maxCtx == 0 || maxCtx > (1u << 24)) {
      emitError(module.getLoc()) << "kiln-prune-context: max-ctx must be in [1, " << (1u << 24)
                                 << "], got " << uint32_t(maxCtx);
      return signalPassFailure();
    }
    auto declaredAttr = module->getAttrOfType<IntegerAttr>(slimming::kContextLengthAttr);
    const int64_t declared = declaredAttr ? declaredAttr.getInt() : 0;
    if (declared <= 0) {
      emitError(module.getLoc(), "kiln-prune-context: the module has no kiln.context_length to "
                                 "compare the cap with");
      return signalPassFailure();
    }
    if (int64_t(maxCtx) > declared)
      emitWarning(module.getLoc())
          << "kiln-prune-context: max-ctx " << uint32_t(maxCtx) << " exceeds the declared context "
          << declared << "; the KV cache and RoPE tables grow";

    const uint64_t kvPerToken = slimming::kvBytesPerToken(module);
    const int64_t kvDeclared = int64_t(kvPerToken) * declared;
    const int64_t kvCapped = int64_t(kvPerToken) * int64_t(maxCtx);
    const int64_t ropeDeclared = int64_t(slimming::ropeTableBytes(module, uint64_t(declared)));
    const int64_t ropeCapped = int64_t(slimming::ropeTableBytes(module, maxCtx));
    module->setAttr(slimming::kMaxCtxAttr, Builder(&getContext()).getI32IntegerAttr(maxCtx));

    std::string effects = "declared_ctx=" + std::to_string(declared) +
                          ",max_ctx=" + std::to_string(maxCtx) +
                          ",kv_bytes_per_token=" + std::to_string(kvPerToken) +
                          ",kv_bytes_declared=" + std::to_string(kvDeclared) +
                          ",kv_bytes=" + std::to_string(kvCapped) +
                          ",kv_bytes_saved=" + std::to_string(kvDeclared - kvCapped) +
                          ",rope_table_bytes_declared=" + std::to_string(ropeDeclared) +
                          ",rope_table_bytes=" + std::to_string(ropeCapped) +
                          ",rope_table_bytes_saved=" + std::to_string(ropeDeclared - ropeCapped);
    slimming::recordPassEffects(module, "kiln-prune-context", effects);
    emitRemark(module.getLoc()) << "kiln-prune-context: " << effects;
    if (kvDeclared > kvCapped)
      numKvBytesSaved += uint64_t(kvDeclared - kvCapped);
  }
};

} // namespace
} // namespace kiln
