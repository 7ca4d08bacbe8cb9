//===- GpuProgram.cpp - the artifact's GPU section -------------------------===//
#include "codegen/vulkan/GpuProgram.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "codegen/vulkan/vk_kernels.h"
#include "kiln/gpu_program.h"

namespace kiln::codegen::vulkan {
namespace {

void put(std::vector<uint8_t> &out, uint32_t w) {
  for (int i = 0; i < 4; ++i)
    out.push_back(uint8_t(w >> (8 * i)));
}

// The bytes [lo, hi) of the weights section a dispatch reads (lo > hi: none yet).
struct Window {
  uint64_t lo = UINT64_MAX, hi = 0;
};

bool resolve(const PushWord &p, const WeightLookup &lookup, const std::string &what,
             uint32_t &b, Window &window, std::string &error) {
  uint64_t v = p.b;
  if (p.ref != PushWord::Ref::None) {
    std::optional<StoredWeight> w = lookup(p.weight);
    if (!w) {
      error = what + ": weight '" + p.weight + "' is not in the weights section";
      return false;
    }
    if (w->format != p.format) {
      error = what + ": weight '" + p.weight + "' is stored in format " +
              std::to_string(w->format) + ", the Vulkan kernel reads " +
              std::to_string(p.format);
      return false;
    }
    v += p.ref == PushWord::Ref::Offset ? w->offset + uint64_t(p.rows) * w->rowStride
                                        : w->rowStride;
    if (p.ref == PushWord::Ref::Offset) {
      const uint64_t from = w->offset + uint64_t(p.rows) * w->rowStride;
      window.lo = std::min(window.lo, from);
      window.hi = std::max(window.hi, p.windowRows ? from + uint64_t(p.windowRows) * w->rowStride
                                                   : w->offset + w->size);
    }
  }
  if (v % p.divide != 0 || v / p.divide > UINT32_MAX) {
    error = what + ": offset " + std::to_string(v) + " does not fit a 32-bit push constant";
    return false;
  }
  b = uint32_t(v / p.divide);
  return true;
}

void putWindow(std::vector<uint8_t> &out, Window w, const std::vector<uint32_t> &offsets) {
  for (uint64_t v : {w.lo, w.hi}) {
    put(out, uint32_t(v));
    put(out, uint32_t(v >> 32));
  }
  put(out, uint32_t(offsets.size() / 2));
  for (uint32_t v : offsets)
    put(out, v);
}

} // namespace

bool serialize(const GpuProgram &program, const WeightLookup &lookup, std::vector<uint8_t> &out,
               std::string &error) {
  std::map<std::string, uint32_t> index; // kernels in order of first use
  std::vector<const kiln_vk_kernel_t *> kernels;
  for (const Dispatch &d : program.dispatches)
    if (!d.kernel.empty() && !index.count(d.kernel)) {
      const kiln_vk_kernel_t *k = kiln_vk_kernel_find(d.kernel.c_str());
      if (!k) {
        error = d.what + ": no Vulkan kernel '" + d.kernel + "'";
        return false;
      }
      index[d.kernel] = uint32_t(kernels.size());
      kernels.push_back(k);
    }
  // Variants a device may take instead (same bindings, push constants and results): they
  // follow the kernels, each naming the one it replaces (docs/vulkan.md, "Kernel variants").
  static const std::pair<const char *, const char *> variants[] = {{"linear", "linear_dot"},
                                                                    {"matmul", "matmul_f16"}};
  std::vector<uint32_t> replaces(kernels.size(), KILN_GPU_NO_KERNEL);
  for (const auto &[base, variant] : variants)
    if (index.count(base)) {
      const kiln_vk_kernel_t *k = kiln_vk_kernel_find(variant);
      if (!k) {
        error = std::string("no Vulkan kernel '") + variant + "'";
        return false;
      }
      replaces.push_back(index[base]);
      kernels.push_back(k);
    }
  if (kernels.empty()) {
    error = "no op of the model lowers to the Vulkan kernels (every one is compiled for the "
            "CPU only): compile for the CPU target instead";
    return false;
  }
  if (program.dispatches.empty() || program.dispatches.size() > KILN_GPU_MAX_DISPATCHES) {
    error = "a GPU program of " + std::to_string(program.dispatches.size()) + " dispatches";
    return false;
  }
  out.clear();
  put(out, KILN_GPU_MAGIC);
  put(out, KILN_GPU_VERSION);
  put(out, uint32_t(kernels.size()));
  put(out, uint32_t(program.dispatches.size()));
  put(out, uint32_t(program.gpuScratchBytes));
  put(out, uint32_t(program.gpuScratchBytes >> 32));
  put(out, KILN_GPU_API_VULKAN_1_1);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const kiln_vk_kernel_t *k = kernels[i];
    const std::string name = k->name;
    put(out, uint32_t(name.size()));
    std::string padded = name;
    padded.resize((name.size() + 3) / 4 * 4, '\0');
    out.insert(out.end(), padded.begin(), padded.end());
    put(out, replaces[i]);
    put(out, uint32_t(*k->word_count));
    for (size_t i = 0; i < *k->word_count; ++i)
      put(out, k->words[i]);
  }
  for (const Dispatch &d : program.dispatches) {
    if (d.constants.size() > KILN_GPU_MAX_CONSTANTS || d.bindings.size() > KILN_GPU_MAX_BINDINGS ||
        d.push.size() > KILN_GPU_MAX_PUSH_WORDS) {
      error = d.what + ": too many constants, bindings or push words";
      return false;
    }
    if (d.kernel.empty()) { // an op compiled for the CPU only: no kernel, nothing bound
      for (uint32_t w : {KILN_GPU_NO_KERNEL, KILN_GPU_WHEN_ALWAYS, d.op, 0u, 0u, 0u})
        put(out, w);
      for (int i = 0; i < 3; ++i)
        for (uint32_t w : {0u, 0u, 1u})
          put(out, w);
      putWindow(out, Window{0, 0}, {});
      continue;
    }
    put(out, index[d.kernel]);
    put(out, d.when);
    put(out, d.op);
    put(out, uint32_t(d.constants.size()));
    for (uint32_t c : d.constants)
      put(out, c);
    put(out, uint32_t(d.bindings.size()));
    for (uint32_t b : d.bindings)
      put(out, b);
    put(out, uint32_t(d.push.size()));
    Window window;
    std::vector<uint32_t> offsets; // (word index, divisor) pairs
    for (size_t k = 0; k < d.push.size(); ++k) {
      const PushWord &p = d.push[k];
      uint32_t b = 0;
      if (!resolve(p, lookup, d.what, b, window, error))
        return false;
      put(out, uint32_t(p.a));
      put(out, b);
      if (p.ref == PushWord::Ref::Offset)
        offsets.insert(offsets.end(), {uint32_t(k), p.divide});
    }
    for (const Groups &g : d.groups) {
      put(out, g.a);
      put(out, g.b);
      put(out, g.div);
    }
    putWindow(out, window.lo < window.hi ? window : Window{0, 0}, offsets);
  }
  return true;
}

std::string describe(const GpuProgram &program) {
  static const char *buffers[] = {"weights", "scratch", "kv", "tokens", "positions", "logits",
                                  "gpu_scratch"};
  std::ostringstream s;
  s << "vulkan program: " << program.dispatches.size() << " dispatches, gpu scratch "
    << program.gpuScratchBytes << " bytes\n";
  for (const Dispatch &d : program.dispatches) {
    if (d.kernel.empty()) {
      s << "  cpu (op " << d.op << " " << d.what << "): " << d.cpuReason << "\n";
      continue;
    }
    s << "  " << d.kernel << (d.when == 1 ? " [decode]" : d.when == 2 ? " [prefill]" : "")
      << " (op " << d.op << " " << d.what << ") constants [";
    for (size_t i = 0; i < d.constants.size(); ++i)
      s << (i ? ", " : "") << d.constants[i];
    s << "] bindings [";
    for (size_t i = 0; i < d.bindings.size(); ++i)
      s << (i ? ", " : "") << (d.bindings[i] < 7 ? buffers[d.bindings[i]] : "?");
    s << "] push [";
    for (size_t i = 0; i < d.push.size(); ++i) {
      const PushWord &p = d.push[i];
      s << (i ? ", " : "");
      if (p.a)
        s << p.a << "n+";
      s << p.b;
      if (p.ref != PushWord::Ref::None)
        s << (p.ref == PushWord::Ref::Offset ? "+offset(" : "+stride(") << p.weight
          << (p.rows ? ", rows " + std::to_string(p.rows) : "") << ")";
    }
    s << "] groups";
    for (const Groups &g : d.groups)
      s << " " << (g.a ? std::to_string(g.a) + "n+" : "") << g.b << "/" << g.div;
    s << "\n";
  }
  return s.str();
}

} // namespace kiln::codegen::vulkan
