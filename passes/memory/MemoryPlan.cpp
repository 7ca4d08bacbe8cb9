#include "passes/memory/MemoryPlan.h"

#include "mlir/IR/Builders.h"

#include "dialects/kiln/IR/KilnAttrNames.h"

using namespace mlir;

namespace kiln::memory {

namespace {
constexpr const char *kKeys[] = {"max_ctx",       "max_batch",
                                 "kv_k",          "kv_v",
                                 "scratch_bytes", "scratch_bytes_without_reuse",
                                 "kv_bytes",      "kv_bytes_per_token"};
} // namespace

void writeMemoryPlan(ModuleOp module, const MemoryPlan &p) {
  Builder b(module.getContext());
  const uint64_t values[] = {p.maxCtx,       p.maxBatch,
                             uint64_t(p.kv.k), uint64_t(p.kv.v),
                             p.scratchBytes, p.scratchBytesWithoutReuse,
                             p.kvBytes,      p.kvBytesPerToken};
  SmallVector<NamedAttribute> entries;
  for (size_t i = 0; i < std::size(kKeys); ++i)
    entries.push_back(b.getNamedAttr(kKeys[i], b.getI64IntegerAttr(int64_t(values[i]))));
  module->setAttr(attr::kMemoryPlan, b.getDictionaryAttr(entries));
}

FailureOr<MemoryPlan> readMemoryPlan(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>(attr::kMemoryPlan);
  if (!dict)
    return module.emitError("the module has no memory plan (run kiln-plan-memory first)");
  uint64_t v[std::size(kKeys)];
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    auto a = dict.getAs<IntegerAttr>(kKeys[i]);
    if (!a || a.getInt() < 0)
      return module.emitError() << "the memory plan has no valid '" << kKeys[i] << "'";
    v[i] = uint64_t(a.getInt());
  }
  auto elem = [](uint64_t x) { return KvElem(uint32_t(x)); };
  MemoryPlan p;
  p.maxCtx = uint32_t(v[0]);
  p.maxBatch = uint32_t(v[1]);
  p.kv = {elem(v[2]), elem(v[3])};
  p.scratchBytes = v[4];
  p.scratchBytesWithoutReuse = v[5];
  p.kvBytes = v[6];
  p.kvBytesPerToken = v[7];
  return p;
}

} // namespace kiln::memory
