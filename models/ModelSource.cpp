#include "models/ModelSource.h"

namespace kiln::models {

bool MetaValue::isInteger() const {
  switch (type) {
  case MetaType::U8: case MetaType::U16: case MetaType::U32: case MetaType::U64:
  case MetaType::I8: case MetaType::I16: case MetaType::I32: case MetaType::I64:
    return true;
  default:
    return false;
  }
}

bool MetaValue::asU64(uint64_t &out) const {
  switch (type) {
  case MetaType::U8: case MetaType::U16: case MetaType::U32: case MetaType::U64:
    out = u;
    return true;
  case MetaType::I8: case MetaType::I16: case MetaType::I32: case MetaType::I64:
    if (i < 0)
      return false;
    out = static_cast<uint64_t>(i);
    return true;
  default:
    return false;
  }
}

bool MetaValue::asF64(double &out) const {
  if (type == MetaType::F32 || type == MetaType::F64)
    out = f;
  else if (type == MetaType::I8 || type == MetaType::I16 || type == MetaType::I32 ||
           type == MetaType::I64)
    out = static_cast<double>(i);
  else if (isInteger())
    out = static_cast<double>(u);
  else
    return false;
  return true;
}

MetaValue MetaValue::ofU32(uint32_t v) {
  MetaValue m;
  m.type = MetaType::U32;
  m.u = v;
  return m;
}

MetaValue MetaValue::ofF32(float v) {
  MetaValue m;
  m.type = MetaType::F32;
  m.f = v;
  return m;
}

MetaValue MetaValue::ofString(std::string v) {
  MetaValue m;
  m.type = MetaType::String;
  m.str = std::move(v);
  return m;
}

const MetaValue *ModelSource::find(const std::string &key) const {
  if (!metadata)
    return nullptr;
  auto it = metadata->find(key);
  return it == metadata->end() ? nullptr : &it->second;
}

const WeightView *ModelSource::findTensor(const std::string &name) const {
  return weights ? weights->find(name) : nullptr;
}

std::string ModelSource::architecture() const {
  const MetaValue *a = find("general.architecture");
  return a && a->type == MetaType::String ? a->str : std::string();
}

} // namespace kiln::models
