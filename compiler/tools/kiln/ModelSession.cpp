#include "compiler/tools/kiln/ModelSession.h"

#include "compiler/InitAll.h"

namespace kiln::tool {

bool ModelSession::load(const std::string &path, std::string &error) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  if (!gguf::importGguf(path, ctx, model, error))
    return false;
  tokenizer = gguf::Tokenizer::fromGguf(*model.file, error);
  return tokenizer != nullptr;
}

uint32_t ModelSession::declaredContext() const {
  auto attr = (*model.module)->getAttrOfType<mlir::IntegerAttr>("kiln.context_length");
  return attr ? uint32_t(attr.getInt()) : 0;
}

bool ModelSession::prepareExecutor(uint32_t maxCtx, std::string &error, KvStorage kv) {
  executor = RefExecutor::create(*model.module, model.weights,
                                 maxCtx ? maxCtx : declaredContext(), error, kv);
  return executor != nullptr;
}

} // namespace kiln::tool
