//===- ChipProfile.cpp - read, validate and write chip profiles -----------===//
//
// YAML I/O does the syntax, the types and unknown or missing keys; validate() checks the
// values and names each bad field by its dotted path. Only the first problem is reported.
//===----------------------------------------------------------------------===//
#include "codegen/targets/ChipProfile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/AArch64TargetParser.h"

using namespace kiln::codegen;

LLVM_YAML_IS_SEQUENCE_VECTOR(CoreCluster)
LLVM_YAML_IS_SEQUENCE_VECTOR(ProfileSource)
LLVM_YAML_IS_SEQUENCE_VECTOR(EstimatedField)
LLVM_YAML_IS_SEQUENCE_VECTOR(CorePower)

namespace llvm::yaml {

template <> struct MappingTraits<CoreCluster> {
  static void mapping(IO &io, CoreCluster &c) {
    io.mapRequired("role", c.role);
    io.mapRequired("count", c.count);
    io.mapRequired("core", c.core);
    io.mapRequired("max_ghz", c.maxGhz);
    io.mapOptional("l2_kib", c.l2Kib);
  }
};

template <> struct MappingTraits<CpuEngine> {
  static void mapping(IO &io, CpuEngine &c) {
    io.mapRequired("arch", c.arch);
    io.mapRequired("features", c.features);
    io.mapRequired("vector_bits", c.vectorBits);
    io.mapRequired("cache_line_bytes", c.cacheLineBytes);
    io.mapRequired("llvm_cpu", c.llvmCpu);
    io.mapOptional("clusters", c.clusters);
    io.mapOptional("l3_kib", c.l3Kib);
  }
};

template <> struct MappingTraits<HexagonEngine> {
  static void mapping(IO &io, HexagonEngine &h) {
    io.mapRequired("version", h.version);
    io.mapRequired("llvm_cpu", h.llvmCpu);
    io.mapRequired("hvx_bytes", h.hvxBytes);
    io.mapOptional("vtcm_kib", h.vtcmKib);
    io.mapOptional("l2_kib", h.l2Kib);
  }
};

template <> struct MappingTraits<GpuEngine> {
  static void mapping(IO &io, GpuEngine &g) {
    io.mapRequired("name", g.name);
    io.mapRequired("vendor", g.vendor);
    io.mapRequired("api_version", g.apiVersion);
    io.mapRequired("subgroup_sizes", g.subgroupSizes);
    io.mapRequired("shared_memory_kib", g.sharedMemoryKib);
    io.mapRequired("fp16", g.fp16);
    io.mapRequired("int8_dot", g.int8Dot);
    io.mapOptional("int8_dot_accelerated", g.int8DotAccelerated);
    io.mapOptional("shader_cores", g.shaderCores);
    io.mapOptional("fp32_gflops", g.fp32Gflops);
    io.mapOptional("fp16_gflops", g.fp16Gflops);
  }
};

template <> struct MappingTraits<DramSystem> {
  static void mapping(IO &io, DramSystem &m) {
    io.mapRequired("type", m.type);
    io.mapRequired("mts", m.mts);
    io.mapRequired("bus_bits", m.busBits);
    io.mapRequired("bandwidth_gbs", m.bandwidthGbs);
  }
};

template <> struct MappingTraits<CorePower> {
  static void mapping(IO &io, CorePower &c) {
    io.mapRequired("core", c.core);
    io.mapRequired("watts", c.watts);
    io.mapRequired("stream_gbs", c.streamGbs);
  }
};

template <> struct MappingTraits<ThermalModel> {
  static void mapping(IO &io, ThermalModel &t) {
    io.mapRequired("ambient_c", t.ambientC);
    io.mapRequired("die_heat_capacity_j_per_k", t.dieHeatCapacityJPerK);
    io.mapRequired("die_to_skin_k_per_w", t.dieToSkinKPerW);
    io.mapRequired("skin_heat_capacity_j_per_k", t.skinHeatCapacityJPerK);
    io.mapRequired("skin_to_ambient_k_per_w", t.skinToAmbientKPerW);
    io.mapRequired("throttle_die_c", t.throttleDieC);
    io.mapRequired("throttle_skin_c", t.throttleSkinC);
    io.mapRequired("idle_w", t.idleW);
    io.mapRequired("dram_pj_per_byte", t.dramPjPerByte);
    io.mapRequired("cores", t.cores);
  }
};

template <> struct MappingTraits<ProfileSource> {
  static void mapping(IO &io, ProfileSource &s) {
    io.mapRequired("id", s.id);
    io.mapRequired("cite", s.cite);
  }
};

template <> struct MappingTraits<EstimatedField> {
  static void mapping(IO &io, EstimatedField &e) {
    io.mapRequired("field", e.field);
    io.mapRequired("why", e.why);
  }
};

template <> struct MappingTraits<ChipProfile> {
  static void mapping(IO &io, ChipProfile &p) {
    io.mapRequired("name", p.name);
    io.mapRequired("display_name", p.displayName);
    io.mapRequired("kind", p.kind);
    io.mapOptional("cpu", p.cpu);
    io.mapOptional("hexagon", p.hexagon);
    io.mapOptional("gpu", p.gpu);
    io.mapOptional("memory", p.memory);
    io.mapOptional("thermal", p.thermal);
    io.mapRequired("sources", p.sources);
    io.mapOptional("estimated", p.estimated);
    io.mapOptional("notes", p.notes, std::string());
  }
};

} // namespace llvm::yaml

namespace kiln::codegen {

namespace {

// Fields `estimated:` may name: the numbers and yes/no facts.
const std::vector<std::string> &numericFields() {
  static const std::vector<std::string> f = {
      "cpu.vector_bits", "cpu.cache_line_bytes", "cpu.l3_kib",       "cpu.clusters.count",
      "cpu.clusters.max_ghz", "cpu.clusters.l2_kib", "hexagon.hvx_bytes", "hexagon.vtcm_kib",
      "hexagon.l2_kib", "gpu.api_version", "gpu.subgroup_sizes", "gpu.shared_memory_kib",
      "gpu.fp16", "gpu.int8_dot", "gpu.int8_dot_accelerated", "gpu.shader_cores",
      "gpu.fp32_gflops", "gpu.fp16_gflops",
      "memory.mts",      "memory.bus_bits",      "memory.bandwidth_gbs",
      "thermal.ambient_c", "thermal.die_heat_capacity_j_per_k", "thermal.die_to_skin_k_per_w",
      "thermal.skin_heat_capacity_j_per_k", "thermal.skin_to_ambient_k_per_w",
      "thermal.throttle_die_c", "thermal.throttle_skin_c", "thermal.idle_w",
      "thermal.dram_pj_per_byte", "thermal.cores.watts", "thermal.cores.stream_gbs"};
  return f;
}

// LLVM 19's Hexagon CPUs (llc -march=hexagon -mcpu=help); v75 and v79 are not among them.
const std::vector<std::string> &llvmHexagonCpus() {
  static const std::vector<std::string> c = {"hexagonv60", "hexagonv62", "hexagonv65",
                                             "hexagonv66", "hexagonv67", "hexagonv68",
                                             "hexagonv69", "hexagonv71", "hexagonv73"};
  return c;
}

bool contains(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool validName(const std::string &s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '+';
  });
}

// The dotted key path of the YAML node at (line, col), 1-based, from indentation: the
// line's own key (when the column lies after it), then each less-indented parent key.
std::string pathAt(const std::string &text, unsigned line, unsigned col) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? nl : nl - start));
    if (nl == std::string::npos)
      break;
    start = nl + 1;
  }
  auto keyOf = [](const std::string &l, size_t &indent) {
    size_t i = l.find_first_not_of(' ');
    if (i == std::string::npos || l[i] == '#')
      return std::string();
    if (l.compare(i, 2, "- ") == 0)
      i = l.find_first_not_of(' ', i + 2);
    indent = i;
    size_t colon = l.find(':', i);
    if (colon == std::string::npos || l[i] == '{' || l[i] == '[')
      return std::string();
    return l.substr(i, colon - i);
  };
  std::vector<std::string> parts;
  size_t limit = col ? col - 1 : 0;
  for (size_t i = std::min<size_t>(line, lines.size()); i-- > 0;) {
    size_t indent = 0;
    std::string key = keyOf(lines[i], indent);
    if (key.empty())
      continue;
    bool own = i + 1 == line && indent < limit && lines[i].find(':', indent) < limit;
    if (own || (i + 1 < line && indent < limit)) {
      parts.push_back(key);
      limit = indent;
      // A list item's key shares its indentation with the item's other keys.
      size_t dash = lines[i].find_first_not_of(' ');
      if (lines[i].compare(dash, 2, "- ") == 0)
        limit = dash;
    }
    if (limit == 0)
      break;
  }
  std::string path;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it)
    path += (path.empty() ? "" : ".") + *it;
  return path;
}

struct DiagSink {
  std::string first;
  const std::string *text;
};

void collectDiag(const llvm::SMDiagnostic &d, void *ctx) {
  auto *sink = static_cast<DiagSink *>(ctx);
  if (!sink->first.empty())
    return;
  unsigned line = unsigned(d.getLineNo()), col = unsigned(d.getColumnNo()) + 1;
  std::string path = pathAt(*sink->text, line, col);
  sink->first = std::to_string(line) + ":" + std::to_string(col) + ": " +
                (path.empty() ? "" : path + ": ") + d.getMessage().str();
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// "1.3" -> 103; -1 unless MAJOR.MINOR with Vulkan's major version 1.
int vulkanVersion(const std::string &v) {
  size_t dot = v.find('.');
  auto digits = [](const std::string &s) {
    return !s.empty() && s.size() <= 3 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string::npos || v.substr(0, dot) != "1" || !digits(v.substr(dot + 1)))
    return -1;
  return 100 + std::stoi(v.substr(dot + 1));
}

std::string validateGpu(const GpuEngine &g) {
  if (g.name.empty())
    return "gpu.name: must not be empty";
  if (!contains(knownGpuVendors(), g.vendor)) {
    std::string known;
    for (const std::string &k : knownGpuVendors())
      known += (known.empty() ? "" : ", ") + k;
    return "gpu.vendor: unknown GPU vendor '" + g.vendor + "' (known: " + known + ")";
  }
  int api = vulkanVersion(g.apiVersion);
  if (api < 0)
    return "gpu.api_version: must be a Vulkan version such as 1.3, got '" + g.apiVersion + "'";
  if (g.subgroupSizes.empty())
    return "gpu.subgroup_sizes: list at least one subgroup size";
  for (size_t i = 0; i < g.subgroupSizes.size(); ++i) {
    int64_t s = g.subgroupSizes[i];
    // Vulkan: a subgroup size is a power of two of at most 128.
    if (s < 1 || s > 128 || (s & (s - 1)))
      return "gpu.subgroup_sizes: " + std::to_string(s) + " is not a power of two in [1, 128]";
    if (i && s <= g.subgroupSizes[i - 1])
      return "gpu.subgroup_sizes: list each size once, smallest first";
  }
  // Vulkan guarantees 16 KiB of workgroup memory.
  if (g.sharedMemoryKib < 16 || g.sharedMemoryKib > 1024)
    return "gpu.shared_memory_kib: must be in [16, 1024], got " + std::to_string(g.sharedMemoryKib);
  // Vulkan 1.3's feature requirements include shaderIntegerDotProduct.
  if (api >= 103 && !g.int8Dot)
    return "gpu.int8_dot: Vulkan " + g.apiVersion + " requires integer dot products";
  if (g.int8DotAccelerated.value_or(false) && !g.int8Dot)
    return "gpu.int8_dot_accelerated: needs int8_dot";
  if (g.shaderCores && (*g.shaderCores < 1 || *g.shaderCores > 1024))
    return "gpu.shader_cores: must be in [1, 1024], got " + std::to_string(*g.shaderCores);
  for (auto [field, v] : {std::pair{"fp32_gflops", g.fp32Gflops}, {"fp16_gflops", g.fp16Gflops}})
    if (v && !(*v >= 1 && *v <= 1e6)) {
      char got[32];
      std::snprintf(got, sizeof got, "%g", *v);
      return std::string("gpu.") + field + ": must be in [1, 1e6] GFLOP/s, got " + got;
    }
  return "";
}

// Checks values and cross-field rules; returns "FIELD: problem" or "".
std::string validate(const ChipProfile &p) {
  const bool soc = p.kind == "soc";
  if (!validName(p.name))
    return "name: '" + p.name + "' must be lower case letters, digits, '-', '.' or '+'";
  if (p.displayName.empty())
    return "display_name: must not be empty";
  if (p.kind != "soc" && p.kind != "generic")
    return "kind: must be soc or generic, not '" + p.kind + "'";
  if (!p.cpu && !p.hexagon && !p.gpu)
    return "cpu, hexagon, gpu: a profile describes at least one engine";
  if (const CpuEngine *c = p.cpu ? &*p.cpu : nullptr) {
    if (c->arch.empty())
      return "cpu.arch: must not be empty";
    std::set<std::string> seen;
    for (const std::string &f : c->features) {
      if (!contains(knownCpuFeatures(), f)) {
        std::string known;
        for (const std::string &k : knownCpuFeatures())
          known += (known.empty() ? "" : ", ") + k;
        return "cpu.features: unknown ISA feature '" + f + "' (known: " + known + ")";
      }
      if (!seen.insert(f).second)
        return "cpu.features: '" + f + "' is listed twice";
    }
    if (!seen.count("neon"))
      return "cpu.features: every aarch64 profile lists neon";
    if (c->vectorBits < 128 || c->vectorBits > 2048 || c->vectorBits % 128)
      return "cpu.vector_bits: must be a multiple of 128 in [128, 2048], got " +
             std::to_string(c->vectorBits);
    if (c->cacheLineBytes < 16 || c->cacheLineBytes > 256 ||
        (c->cacheLineBytes & (c->cacheLineBytes - 1)))
      return "cpu.cache_line_bytes: must be a power of two in [16, 256], got " +
             std::to_string(c->cacheLineBytes);
    if (!llvm::AArch64::parseCpu(c->llvmCpu))
      return "cpu.llvm_cpu: '" + c->llvmCpu + "' is not an AArch64 CPU LLVM 19 knows";
    if (soc && c->clusters.empty())
      return "cpu.clusters: a soc profile lists its core clusters";
    for (const CoreCluster &k : c->clusters) {
      if (k.role != "prime" && k.role != "performance" && k.role != "efficiency")
        return "cpu.clusters.role: must be prime, performance or efficiency, not '" + k.role +
               "'";
      if (k.count < 1 || k.count > 64)
        return "cpu.clusters.count: must be in [1, 64], got " + std::to_string(k.count);
      if (k.core.empty())
        return "cpu.clusters.core: must not be empty";
      if (!(k.maxGhz > 0 && k.maxGhz <= 10))
        return "cpu.clusters.max_ghz: must be in (0, 10], got " + std::to_string(k.maxGhz);
      if (k.l2Kib && *k.l2Kib <= 0)
        return "cpu.clusters.l2_kib: must be positive, got " + std::to_string(*k.l2Kib);
    }
    if (c->l3Kib && *c->l3Kib <= 0)
      return "cpu.l3_kib: must be positive, got " + std::to_string(*c->l3Kib);
  }
  if (const HexagonEngine *h = p.hexagon ? &*p.hexagon : nullptr) {
    if (h->version.size() < 3 || h->version[0] != 'v' ||
        !std::all_of(h->version.begin() + 1, h->version.end(),
                     [](char c) { return c >= '0' && c <= '9'; }))
      return "hexagon.version: must look like v73, got '" + h->version + "'";
    if (!contains(llvmHexagonCpus(), h->llvmCpu))
      return "hexagon.llvm_cpu: '" + h->llvmCpu +
             "' is not a Hexagon CPU LLVM 19 knows (hexagonv60 ... hexagonv73)";
    if (h->hvxBytes != 64 && h->hvxBytes != 128)
      return "hexagon.hvx_bytes: must be 64 or 128, got " + std::to_string(h->hvxBytes);
    if (soc && !h->vtcmKib)
      return "hexagon.vtcm_kib: a soc profile gives the VTCM size";
    if (h->vtcmKib && *h->vtcmKib <= 0)
      return "hexagon.vtcm_kib: must be positive, got " + std::to_string(*h->vtcmKib);
    if (h->l2Kib && (*h->l2Kib < 64 || *h->l2Kib > (1 << 20)))
      return "hexagon.l2_kib: must be in 64..1048576, got " + std::to_string(*h->l2Kib);
  }
  if (p.gpu)
    if (std::string problem = validateGpu(*p.gpu); !problem.empty())
      return problem;
  if (soc && !p.memory)
    return "memory: a soc profile describes its DRAM";
  if (const DramSystem *m = p.memory ? &*p.memory : nullptr) {
    if (m->type.empty())
      return "memory.type: must not be empty";
    if (m->mts <= 0)
      return "memory.mts: must be positive, got " + std::to_string(m->mts);
    if (m->busBits <= 0 || m->busBits % 16)
      return "memory.bus_bits: must be a positive multiple of 16, got " +
             std::to_string(m->busBits);
    if (!(m->bandwidthGbs > 0) || !std::isfinite(m->bandwidthGbs))
      return "memory.bandwidth_gbs: must be positive, got " + std::to_string(m->bandwidthGbs);
    // A typo in any of the three shows here: peak = transfers/s x bus width.
    double peak = double(m->mts) * double(m->busBits) / 8 / 1000;
    if (std::fabs(m->bandwidthGbs - peak) > 0.01 * peak)
      return "memory.bandwidth_gbs: " + std::to_string(m->bandwidthGbs) +
             " disagrees with mts x bus_bits / 8 = " + std::to_string(peak);
  }
  if (const ThermalModel *t = p.thermal ? &*p.thermal : nullptr) {
    if (!p.cpu || p.cpu->clusters.empty())
      return "thermal: needs cpu.clusters (the cores it gives power for)";
    struct Range {
      const char *field;
      double v, lo, hi;
    } ranges[] = {{"ambient_c", t->ambientC, -20, 50},
                  {"die_heat_capacity_j_per_k", t->dieHeatCapacityJPerK, 0.01, 1000},
                  {"die_to_skin_k_per_w", t->dieToSkinKPerW, 0.01, 100},
                  {"skin_heat_capacity_j_per_k", t->skinHeatCapacityJPerK, 1, 100000},
                  {"skin_to_ambient_k_per_w", t->skinToAmbientKPerW, 0.01, 100},
                  {"throttle_die_c", t->throttleDieC, 30, 150},
                  {"throttle_skin_c", t->throttleSkinC, 25, 80},
                  {"idle_w", t->idleW, 0, 50},
                  {"dram_pj_per_byte", t->dramPjPerByte, 0, 10000}};
    for (const Range &r : ranges)
      if (!(r.v >= r.lo && r.v <= r.hi))
        return std::string("thermal.") + r.field + ": must be in [" + fmt(r.lo) + ", " +
               fmt(r.hi) + "], got " + fmt(r.v);
    if (t->throttleSkinC <= t->ambientC)
      return "thermal.throttle_skin_c: must be above ambient_c";
    for (const CorePower &c : t->cores) {
      if (!(c.watts > 0 && c.watts <= 50))
        return "thermal.cores.watts: must be in (0, 50], got " + fmt(c.watts);
      if (!(c.streamGbs > 0 && c.streamGbs <= 1000))
        return "thermal.cores.stream_gbs: must be in (0, 1000], got " + fmt(c.streamGbs);
    }
    for (const CoreCluster &k : p.cpu->clusters)
      if (std::none_of(t->cores.begin(), t->cores.end(),
                       [&](const CorePower &c) { return c.core == k.core; }))
        return "thermal.cores: no entry for the cluster core '" + k.core + "'";
  }
  if (p.sources.empty())
    return "sources: every profile names its public sources";
  std::set<std::string> ids;
  for (const ProfileSource &s : p.sources) {
    if (s.id.empty() || s.cite.empty())
      return "sources: every source has an id and a cite";
    if (!ids.insert(s.id).second)
      return "sources: id '" + s.id + "' is used twice";
  }
  for (const EstimatedField &e : p.estimated) {
    if (!contains(numericFields(), e.field))
      return "estimated.field: '" + e.field + "' is not a numeric or yes/no field of a profile";
    if (e.why.empty())
      return "estimated.why: say why " + e.field + " is estimated";
  }
  return "";
}

} // namespace

bool ChipProfile::isEstimated(const std::string &field) const {
  return std::any_of(estimated.begin(), estimated.end(),
                     [&](const EstimatedField &e) { return e.field == field; });
}

std::vector<std::string> ChipProfile::engines() const {
  std::vector<std::string> e;
  if (cpu)
    e.push_back("cpu");
  if (hexagon)
    e.push_back("hvx");
  if (gpu)
    e.push_back("gpu");
  return e;
}

const std::vector<std::string> &knownCpuFeatures() {
  static const std::vector<std::string> f = {"neon", "fp16", "dotprod", "i8mm",
                                             "bf16", "sve",  "sve2",    "sme"};
  return f;
}

const std::vector<std::string> &knownGpuVendors() {
  static const std::vector<std::string> v = {"amd", "arm", "imagination", "qualcomm", "samsung"};
  return v;
}

std::optional<ChipProfile> parseChipProfile(const std::string &yamlText, const std::string &file,
                                            std::string &error) {
  DiagSink sink{"", &yamlText};
  llvm::yaml::Input in(yamlText, nullptr, collectDiag, &sink);
  ChipProfile p;
  in >> p;
  if (in.error() || !sink.first.empty()) {
    error = file + ":" + (sink.first.empty() ? " not a YAML mapping" : sink.first);
    return std::nullopt;
  }
  if (std::string problem = validate(p); !problem.empty()) {
    error = file + ": " + problem;
    return std::nullopt;
  }
  return p;
}

std::string writeChipProfile(const ChipProfile &profile) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::yaml::Output out(os);
  ChipProfile copy = profile;
  out << copy;
  os.flush();
  return text;
}

} // namespace kiln::codegen
