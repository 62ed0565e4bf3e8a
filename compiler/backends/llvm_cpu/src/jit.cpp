// llvm-cpu code generation and loading: the host target machine, the O3 pipeline, object
// emission, ORC LLJIT linking, and the compile cache (memory and disk).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/llvm_cpu.h"
#include "tl/format/llvm_cpu_abi.h"

#include "codegen.h"
#include "tl/ir/clone.h"
#include "tl/ir/printer.h"
#include "tl/passes/pass_manager.h"
#include "tl/reference/numerics.h"
#include "tl/support/blob_cache.h"
#include "tl_llvm_cpu_source_hash.h"
#include "vector_math.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

namespace tl::llvm_cpu {
namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> target_machine(const CompileOptions &o, std::string *error) {
  init_llvm();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    *error = llvm::toString(jtmb.takeError());
    return nullptr;
  }
  if (o.cpu != "host") {
    jtmb->setCPU(o.cpu);
    jtmb->getFeatures() = llvm::SubtargetFeatures();
  }
  if (!o.features.empty())
    jtmb->getFeatures().addFeaturesVector({o.features});
  jtmb->setCodeGenOptLevel(o.opt_level >= 3   ? llvm::CodeGenOptLevel::Aggressive
                           : o.opt_level == 0 ? llvm::CodeGenOptLevel::None
                                              : llvm::CodeGenOptLevel::Default);
  auto tm = jtmb->createTargetMachine();
  if (!tm) {
    *error = llvm::toString(tm.takeError());
    return nullptr;
  }
  // LLVM only warns on stderr for an unknown CPU and generates for a generic one.
  if (o.cpu != "host" && !(*tm)->getMCSubtargetInfo()->isCPUStringValid(o.cpu)) {
    *error = "llvm-cpu: '" + o.cpu + "' is not an LLVM CPU of " + (*tm)->getTargetTriple().str();
    return nullptr;
  }
  return std::move(*tm);
}

/// Plans (planning_passes, on a copy: the caller's module and its cache key stay as given)
/// unless `o.planned`, lowers and optimizes `module` into `out`; false with `error` set when
/// lowering fails.
bool build(const ir::Module &module, llvm::TargetMachine &tm, const CompileOptions &o,
           llvm::Module &out, std::string *error) {
  std::unique_ptr<ir::Module> copy;
  if (!o.planned) {
    copy = ir::clone(module);
    passes::PassManager planner;
    for (const passes::PassInfo &pass : planning_passes(o))
      planner.add_pass(pass);
    if (passes::Status s = planner.run(*copy); !s) {
      *error = s.message;
      return false;
    }
  }
  const ir::Module *planned = copy ? copy.get() : &module;
  out.setDataLayout(tm.createDataLayout());
  out.setTargetTriple(tm.getTargetTriple().str());
  const x86::Isa isa =
      tm.getTargetTriple().isX86() ? x86::isa_features(*tm.getMCSubtargetInfo()) : x86::Isa{};
  if (tm.getTargetTriple().isX86()) { // what the loader checks the host for (llvm_cpu_abi.h)
    llvm::Constant *text = llvm::ConstantDataArray::getString(
        out.getContext(), x86::required_features(*tm.getMCSubtargetInfo()));
    new llvm::GlobalVariable(out, text->getType(), true, llvm::GlobalValue::ExternalLinkage, text,
                             TL_CPU_FEATURES_SYMBOL);
  }
  try {
    const unsigned vector_bits = isa.avx512f ? 512 : isa.avx ? 256 : 128;
    lower_module(*planned, out, vector_bits, isa);
  } catch (const LoweringError &e) {
    *error = e.what();
    return false;
  }
  for (llvm::Function &f : out)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", tm.getTargetCPU());
      f.addFnAttr("target-features", tm.getTargetFeatureString());
      // LLVM tunes Intel's AVX-512 CPUs (skylake-avx512 to sapphirerapids, rocketlake) for
      // 256-bit vectors, so its vectorizers split TL's loops in two where Zen 4 takes 512 bits.
      if (isa.avx512f)
        f.addFnAttr("prefer-vector-width", "512");
    }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  // No vector library in the target library info: math reaches SLEEF through helpers with
  // vector variants (vector_math.h), so nothing is mapped to glibc's 4-ulp libmvec behind them.
  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  const llvm::OptimizationLevel level = o.opt_level >= 3   ? llvm::OptimizationLevel::O3
                                        : o.opt_level == 2 ? llvm::OptimizationLevel::O2
                                        : o.opt_level == 1 ? llvm::OptimizationLevel::O1
                                                           : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(out, mam);
  finish_helpers(out);
  x86::finish_module(out, isa);
  return true;
}

/// What besides the module decides the object: the CPU and features code is generated for, the
/// optimization level, this code generator's sources and LLVM's version.
std::string identity(llvm::TargetMachine &tm, const CompileOptions &o) {
  return "llvm-cpu cpu=" + tm.getTargetCPU().str() +
         " features=" + tm.getTargetFeatureString().str() + " O" + std::to_string(o.opt_level) +
         " source=" TL_LLVM_CPU_SOURCE_HASH " llvm=" LLVM_VERSION_STRING;
}

} // namespace

std::string emit_llvm_ir(const ir::Module &module, const CompileOptions &options,
                         std::string *error) {
  auto tm = target_machine(options, error);
  if (!tm)
    return {};
  llvm::LLVMContext ctx;
  llvm::Module out("tl", ctx);
  if (!build(module, *tm, options, out, error))
    return {};
  std::string text;
  llvm::raw_string_ostream os(text);
  out.print(os, nullptr);
  return text;
}

std::vector<uint8_t> compile_object(const ir::Module &module, const CompileOptions &options,
                                    std::string *error) {
  auto tm = target_machine(options, error);
  if (!tm)
    return {};
  llvm::LLVMContext ctx;
  llvm::Module out("tl", ctx);
  if (!build(module, *tm, options, out, error))
    return {};
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    *error = "the target machine cannot emit object files";
    return {};
  }
  pm.run(out);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

std::string target_identity(const CompileOptions &options, std::string *error) {
  auto tm = target_machine(options, error);
  return tm ? identity(*tm, options) : std::string();
}

std::unique_ptr<LoadedProgram> compile_and_load(const ir::Module &module,
                                                const CompileOptions &options, std::string *error) {
  auto tm = target_machine(options, error);
  if (!tm)
    return nullptr;
  const std::string key = support::cache_key({ir::print(module), identity(*tm, options)});
  std::vector<uint8_t> object = support::cache_get("llvm-cpu", key);
  if (object.empty()) {
    object = compile_object(module, options, error);
    if (object.empty())
      return nullptr;
    support::cache_put("llvm-cpu", key, object);
  }
  return load_object(object.data(), object.size(), error);
}

} // namespace tl::llvm_cpu
