//===- TargetBackend.h - what a back end is to the compiler ---------------===//
//
// Every back end kiln generates code for implements this one interface (as IREE's
// TargetBackend): what it supports, the passes it adds to the back half of the pipeline
// (compiler/pipelines/BackHalf.h orders them), how it turns the lowered module into code,
// and what it writes into the artifact. The CPU back end (codegen/cpu/CpuBackend.h) is one
// instance per x86-64 level, chip CPU and Hexagon DSP; a new back end is a new subclass
// and a line in createTargetBackend (docs/adding-a-target.md), nothing in the CLI.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_COMMON_TARGETBACKEND_H
#define KILN_CODEGEN_COMMON_TARGETBACKEND_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
class OpPassManager;
class Operation;
} // namespace mlir

namespace kiln::codegen {

struct LoweringWeights;

// A cache the layout passes size to, and where its size came from ("profile", "assumed").
struct CacheBudget {
  unsigned kib = 0; // 0: the pass does not run
  std::string from = "assumed";
};

// How far code generation goes.
enum class CodeStage { LlvmIr, Object, SharedObject };

struct EmittedCode {
  std::string text;                  // CodeStage::LlvmIr: the optimised IR
  std::vector<uint8_t> object;       // relocatable object (unless written to a file)
  uint64_t objectSize = 0;           // its size, also when written to a file
  std::vector<uint8_t> sharedObject; // the artifact's code section
  std::vector<uint8_t> gpuProgram;   // the artifact's GPU section (a +vulkan target), or none
};

// The artifact's target record: the runtime checks it before it binds the code.
struct ArtifactTargetRecord {
  std::string name, triple, cpu;
  std::vector<std::string> requiredFeatures;
  std::string governorDefaults; // runtime governor SPEC defaults (CpuTarget's)
};

class TargetBackend {
public:
  virtual ~TargetBackend() = default;
  virtual const std::string &name() const = 0;

  // What it supports: storage formats (ggml ids) its kernels read, the weight layout
  // `--layout packed` means for it, plain rows' alignment, and the ops it lowers.
  virtual bool supportsFormat(uint32_t format) const = 0;
  virtual std::string packedLayout() const = 0;
  // Whether its kernels read q4_K/q5_K/q6_K's r16 groups with integer dot products (else
  // `--precision source` requantises K-quants into formats that have them).
  virtual bool integerKQuants() const { return false; }
  // Whether its kernels read q4_K/q5_K/q6_K in ggml's block rows, its packed layout (a GPU
  // program's): `--precision source` keeps them there too.
  virtual bool readsKQuantBlockRows() const { return false; }
  virtual unsigned rowAlignBytes() const = 0;
  virtual bool supportsOp(mlir::Operation *op) const = 0;
  // The caches the prefill panels and the weight shards are sized to.
  virtual CacheBudget prefillCache() const = 0;
  virtual CacheBudget shardCache() const = 0;

  // The passes that take the planned kiln module to the back end's lowered form (for a
  // CPU: the LLVM dialect), storing the weights the code reads into `weights`.
  virtual void addLoweringPasses(mlir::OpPassManager &pm, LoweringWeights &weights) const = 0;

  // Code from the lowered module, up to `stage`. embeddedWeights: the object also defines
  // kiln_model_weights holding them (a static link needs no artifact); objectPath: the
  // object is written there instead of kept in memory.
  virtual bool emitCode(mlir::ModuleOp lowered, CodeStage stage, EmittedCode &out,
                        std::string &error,
                        const std::vector<uint8_t> *embeddedWeights = nullptr,
                        const std::string &objectPath = {}) const = 0;

  virtual ArtifactTargetRecord artifactTarget() const = 0;
};

// The back end for a --target name (TargetResolver.h); null + one-line error if none.
std::unique_ptr<TargetBackend> createTargetBackend(const std::string &name, std::string &error);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_TARGETBACKEND_H
