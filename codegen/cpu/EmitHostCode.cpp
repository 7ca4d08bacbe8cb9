#include "codegen/cpu/EmitHostCode.h"

#include <algorithm>
#include <fstream>

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include "mlir/IR/Builders.h"

#include "codegen/cpu/UkernelDecls.h"
#include "kiln/abi.h"

namespace kiln::codegen {

namespace {

constexpr const char *kLld = "/usr/lib/llvm-19/bin/ld.lld";

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const CpuTarget &t,
                                                       std::string &error) {
  llvm::InitializeAllTargetInfos();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      t.triple, t.cpu, "", options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Aggressive));
}

// The generated functions get the kernels' CPU, features and freestanding attribute so
// the kernels can inline into them.
void copyTargetAttributes(llvm::Module &m, const std::string &tuneCpu) {
  llvm::Attribute cpu, features;
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && f.hasFnAttribute("target-features")) {
      cpu = f.getFnAttribute("target-cpu");
      features = f.getFnAttribute("target-features");
      break;
    }
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && !f.hasFnAttribute("target-features")) {
      if (cpu.isValid())
        f.addFnAttr(cpu);
      if (features.isValid())
        f.addFnAttr(features);
      // The kernels are freestanding ("no-builtins"); LLVM inlines only between functions
      // that agree, and the generated code calls no library either.
      f.addFnAttr("no-builtins");
    }
  // A chip's prime core schedules the code; the ISA level stays the kernels' own.
  if (!tuneCpu.empty())
    for (llvm::Function &f : m)
      if (!f.isDeclaration())
        f.addFnAttr("tune-cpu", tuneCpu);
}

void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

constexpr const char *kWeightsSymbol = "kiln_model_weights";
constexpr const char *kWeightsSection = ".rodata.kiln_weights";

// Where in the object file the zeros of kiln_model_weights lie: its section's file offset
// (the symbol alone in it, at 0), checked against the expected size.
bool weightsOffset(llvm::MemoryBufferRef object, uint64_t size, uint64_t &offset,
                   std::string &error) {
  auto file = llvm::object::ObjectFile::createObjectFile(object);
  if (!file) {
    error = "internal error: cannot read the emitted object: " +
            llvm::toString(file.takeError());
    return false;
  }
  auto *elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(file->get());
  if (!elf) {
    error = "internal error: the emitted object is not ELF";
    return false;
  }
  for (const llvm::object::SectionRef &sec : elf->sections()) {
    auto name = sec.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name != kWeightsSection)
      continue;
    if (sec.getSize() != size) {
      error = "internal error: the weights section holds " + std::to_string(sec.getSize()) +
              " bytes, not " + std::to_string(size);
      return false;
    }
    for (const llvm::object::SymbolRef &sym : (*file)->symbols()) {
      auto symName = sym.getName();
      auto value = sym.getValue();
      if (symName && *symName == kWeightsSymbol && value && *value != 0) {
        error = "internal error: kiln_model_weights is not at the start of its section";
        return false;
      }
      if (!symName)
        llvm::consumeError(symName.takeError());
      if (!value)
        llvm::consumeError(value.takeError());
    }
    offset = llvm::object::ELFSectionRef(sec).getOffset();
    return true;
  }
  error = "internal error: the emitted object has no " + std::string(kWeightsSection) +
          " section";
  return false;
}

// Writes the weights over the zeros of kiln_model_weights in the object file at `path`.
bool placeWeights(const std::string &path, const std::vector<uint8_t> &weights,
                  std::string &error) {
  uint64_t at = 0;
  {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf) {
      error = "cannot read back '" + path + "': " + buf.getError().message();
      return false;
    }
    if (!weightsOffset((*buf)->getMemBufferRef(), weights.size(), at, error))
      return false;
  }
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(std::streamoff(at));
  f.write(reinterpret_cast<const char *>(weights.data()), std::streamsize(weights.size()));
  f.close();
  if (!f) {
    error = "writing the weights into '" + path + "' failed";
    return false;
  }
  return true;
}

bool readFile(const std::string &path, std::vector<uint8_t> &out) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buf)
    return false;
  out.assign((*buf)->getBufferStart(), (*buf)->getBufferEnd());
  return true;
}

bool linkSharedObject(const std::vector<uint8_t> &object, std::vector<uint8_t> &so,
                      std::string &error) {
  llvm::SmallString<128> objPath, soPath;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("kiln", "o", fd, objPath) ||
      llvm::sys::fs::createTemporaryFile("kiln", "so", soPath)) {
    error = "cannot create temporary files for linking";
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(reinterpret_cast<const char *>(object.data()), object.size());
  }
  // --no-undefined: the code must not depend on anything (no libc) so it loads anywhere.
  std::vector<llvm::StringRef> args = {kLld,       "-shared",     "--no-undefined",
                                       "-z",       "noexecstack", "--gc-sections",
                                       "-o",       soPath,        objPath};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(kLld, args, std::nullopt, {}, 0, 0, &msg);
  bool ok = rc == 0 && readFile(std::string(soPath), so);
  if (!ok)
    error = "ld.lld failed to link the shared object (exit " + std::to_string(rc) + ") " + msg;
  llvm::sys::fs::remove(objPath);
  llvm::sys::fs::remove(soPath);
  return ok;
}

// Every kernel the generated code declares (from ukernel_abi.h's prototypes) must be
// defined by the target's bitcode with the same LLVM function type: a prototype edited
// without its kernels, or the other way round, is an error here, not a wrong call.
bool checkDeclarations(const llvm::Module &generated, const llvm::Module &kernels,
                       const std::string &target, std::string &error) {
  for (const llvm::Function &f : generated) {
    if (!f.isDeclaration() || !f.getName().starts_with("kiln_uk_"))
      continue;
    const llvm::Function *def = kernels.getFunction(f.getName());
    if (!def || def->isDeclaration()) {
      error = "the micro-kernels for " + target + " do not define " + f.getName().str();
      return false;
    }
    if (def->getFunctionType() != f.getFunctionType()) {
      std::string declared, defined;
      llvm::raw_string_ostream d(declared), k(defined);
      f.getFunctionType()->print(d);
      def->getFunctionType()->print(k);
      error = "micro-kernel ABI mismatch for " + target + ": " + f.getName().str() +
              " is declared " + declared + " (ukernel_abi.h) but the bitcode defines " +
              defined;
      return false;
    }
  }
  return true;
}

llvm::Expected<std::unique_ptr<llvm::Module>> parseKernels(const CpuTarget &t,
                                                            llvm::LLVMContext &ctx) {
  llvm::MemoryBufferRef bc(
      llvm::StringRef(reinterpret_cast<const char *>(t.bitcode), t.bitcodeSize), t.name);
  return llvm::parseBitcodeFile(bc, ctx);
}

// The LLVM-dialect module as LLVM IR in ctx (null when translation fails).
std::unique_ptr<llvm::Module> translate(mlir::ModuleOp module, llvm::LLVMContext &ctx,
                                        llvm::StringRef name) {
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);
  return mlir::translateModuleToLLVMIR(module, ctx, name);
}

} // namespace

bool checkUkernelDeclarations(mlir::ModuleOp declarations, const CpuTarget &t,
                              std::string &error) {
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> m = translate(declarations, llvmCtx, "abi");
  auto kernels = parseKernels(t, llvmCtx);
  if (!m || !kernels) {
    error = "cannot read the micro-kernel bitcode for " + t.name;
    if (!kernels)
      llvm::consumeError(kernels.takeError());
    return false;
  }
  return checkDeclarations(*m, **kernels, t.name, error);
}

bool checkUkernelAbi(const CpuTarget &t, std::string &error) {
  mlir::MLIRContext ctx;
  ctx.getOrLoadDialect<mlir::LLVM::LLVMDialect>();
  mlir::OpBuilder b(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> decls = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(decls->getBody());
  forEachUkernel(&ctx, [&](const char *name, mlir::LLVM::LLVMFunctionType type) {
    b.create<mlir::LLVM::LLVMFuncOp>(b.getUnknownLoc(), name, type);
  });
  return checkUkernelDeclarations(*decls, t, error);
}

bool emitHostCode(mlir::ModuleOp lowered, const CpuTarget &t, CodeStage upTo,
                  EmittedCode &out, std::string &error,
                  const std::vector<uint8_t> *embeddedWeights, const std::string &objectPath) {
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> m = translate(lowered, llvmCtx, "kiln");
  if (!m) {
    error = "translating the lowered module to LLVM IR failed";
    return false;
  }
  auto tm = makeTargetMachine(t, error);
  if (!tm)
    return false;
  m->setTargetTriple(t.triple);
  m->setDataLayout(tm->createDataLayout());

  auto kernels = parseKernels(t, llvmCtx);
  if (!kernels) {
    error = "cannot read the micro-kernel bitcode for " + t.name + ": " +
            llvm::toString(kernels.takeError());
    return false;
  }
  if (!checkDeclarations(*m, **kernels, t.name, error))
    return false;
  (*kernels)->setTargetTriple(t.triple);
  (*kernels)->setDataLayout(tm->createDataLayout());
  if (llvm::Linker::linkModules(*m, std::move(*kernels))) {
    error = "linking the micro-kernels into the generated code failed";
    return false;
  }
  copyTargetAttributes(*m, t.tuneCpu);
  if (embeddedWeights) {
    // Zeros in a section of its own, the bytes written into the object afterwards
    // (placeWeights): as an LLVM constant they were copied twice more (the constant and
    // the object's section) while the object was emitted. Externally initialised, so the
    // optimiser never folds a load from it to the zeros.
    auto *type = llvm::ArrayType::get(llvm::Type::getInt8Ty(llvmCtx), embeddedWeights->size());
    auto *gv = new llvm::GlobalVariable(*m, type, /*isConstant=*/true,
                                        llvm::GlobalValue::ExternalLinkage,
                                        llvm::ConstantAggregateZero::get(type),
                                        kWeightsSymbol);
    gv->setExternallyInitialized(true);
    gv->setSection(kWeightsSection);
    gv->setAlignment(llvm::Align(64));
  }
  // Only the ABI entry (and embedded weights) stay visible; everything else may be
  // inlined and dropped.
  llvm::internalizeModule(*m, [](const llvm::GlobalValue &gv) {
    return gv.getName() == KILN_ABI_ENTRY || gv.getName() == kWeightsSymbol ||
           gv.getName().starts_with(KILN_OP_ENTRY_PREFIX);
  });
  if (llvm::verifyModule(*m, &llvm::errs())) {
    error = "internal error: the linked LLVM module does not verify";
    return false;
  }
  optimize(*m, *tm);
  if (upTo == CodeStage::LlvmIr) {
    llvm::raw_string_ostream os(out.text);
    m->print(os, nullptr);
    return true;
  }

  auto emitObject = [&](llvm::raw_pwrite_stream &os) {
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
      error = "the " + t.name + " back end cannot emit an object file";
      return false;
    }
    pm.run(*m);
    return true;
  };
  if (upTo == CodeStage::Object && !objectPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec, llvm::sys::fs::OF_None);
    if (ec) {
      error = "cannot write '" + objectPath + "': " + ec.message();
      return false;
    }
    bool ok = emitObject(os);
    out.objectSize = os.tell();
    os.close();
    if (ok && os.has_error())
      error = "writing '" + objectPath + "' failed: " + os.error().message();
    ok = ok && !os.has_error();
    os.clear_error();
    ok = ok && (!embeddedWeights || placeWeights(objectPath, *embeddedWeights, error));
    if (!ok) // no partial object left behind
      llvm::sys::fs::remove(objectPath);
    return ok;
  }
  llvm::SmallVector<char, 0> obj;
  {
    llvm::raw_svector_ostream os(obj);
    if (!emitObject(os))
      return false;
  }
  out.object.assign(obj.begin(), obj.end());
  out.objectSize = out.object.size();
  if (embeddedWeights) {
    uint64_t at = 0;
    if (!weightsOffset(llvm::MemoryBufferRef(llvm::StringRef(obj.data(), obj.size()), "object"),
                       embeddedWeights->size(), at, error))
      return false;
    std::copy(embeddedWeights->begin(), embeddedWeights->end(), out.object.begin() + at);
  }
  if (upTo == CodeStage::Object)
    return true;
  return linkSharedObject(out.object, out.sharedObject, error);
}

} // namespace kiln::codegen
