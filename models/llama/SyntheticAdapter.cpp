#include "models/llama/SyntheticAdapter.h"

#include <cmath>

#include "models/weights/WeightEdits.h"

namespace kiln::llama {

namespace {

// splitmix64: uniform floats in [-1, 1), the same on every machine.
struct Rng {
  uint64_t s;
  float next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return float(double(z >> 40) / double(1ull << 23)) - 1.0f;
  }
};

void addF32(models::ModelWriter &w, const std::string &name, std::vector<uint64_t> dims,
            const std::vector<float> &v) {
  w.addTensor(name, 0, dims, v.data(), v.size() * sizeof(float));
}

bool addHead(models::ModelWriter &w, const WeightStore &base, const SyntheticAdapterOptions &o,
             Rng &rng, std::string &error) {
  for (const char *name : {"output_norm.weight", "output.weight"}) {
    const WeightView *v = base.find(name);
    if (!v)
      continue; // a tied model's head is the norm alone
    std::vector<float> values;
    if (!decodeView(*v, values, error))
      return false;
    for (float &x : values)
      x *= 1.0f + o.magnitude * rng.next();
    addF32(w, name, v->dims, values);
  }
  if (!base.find("output_norm.weight")) {
    error = "the base model has no output_norm.weight";
    return false;
  }
  return true;
}

} // namespace

bool addSyntheticAdapter(models::ModelWriter &w, const WeightStore &base,
                         const std::string &architecture, const SyntheticAdapterOptions &o,
                         std::string &error) {
  Rng rng{o.seed};
  w.addString("general.architecture", architecture);
  if (o.head) {
    w.addString("general.type", "model");
    w.addString("general.name", "kiln synthetic head");
    return addHead(w, base, o, rng, error);
  }
  if (o.rank == 0) {
    error = "--rank must be at least 1";
    return false;
  }
  w.addString("general.type", "adapter");
  w.addString("general.name", "kiln synthetic LoRA");
  w.addString("adapter.type", "lora");
  w.addF32("adapter.lora.alpha", o.alpha);
  size_t added = 0;
  for (const auto &[name, v] : base.all()) {
    bool wanted = false;
    for (const std::string &t : o.targets) {
      const std::string tail = "." + t + ".weight";
      wanted |= name == t + ".weight" ||
                (name.rfind("blk.", 0) == 0 && name.size() > tail.size() &&
                 name.compare(name.size() - tail.size(), tail.size(), tail) == 0);
    }
    if (!wanted || v.dims.size() != 2)
      continue;
    const uint64_t in = v.dims[0], out = v.dims[1];
    std::vector<float> a(in * o.rank), b(o.rank * out);
    const float aScale = 1.0f / std::sqrt(float(in));
    for (float &x : a)
      x = aScale * rng.next();
    for (float &x : b)
      x = o.magnitude * rng.next();
    addF32(w, name + ".lora_a", {in, o.rank}, a);
    addF32(w, name + ".lora_b", {o.rank, out}, b);
    ++added;
  }
  if (!added) {
    error = "no matrix of the base model matches the targets";
    return false;
  }
  return true;
}

} // namespace kiln::llama
