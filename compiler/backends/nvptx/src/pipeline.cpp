// The nvptx backend's table of contents.
//
// compile(module)
//   nvptx-plan-layouts    the layout of every tile (plan_layouts.h)
//   per architecture:
//     lower each kernel   NVVM IR from those layouts (codegen.h)
//     link libdevice      only the math functions used; internalized, then NVVMReflect
//     optimize            LLVM's O3 pipeline with the NVPTX target machine
//     emit PTX            the NVPTX asm printer
//   package               the code blob with each kernel's launch metadata (format/nvptx)
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/nvptx.h"

#include "codegen.h"
#include "plan_layouts.h"
#include "tl/ir/clone.h"
#include "tl_nvptx_source_hash.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace tl::nvptx {
namespace {

const char *kTriple = "nvptx64-nvidia-cuda";

std::string default_libdevice() {
  const char *root = std::getenv("TL_CUDA_PATH");
  return std::string(root && *root ? root : "/usr/local/cuda") + "/nvvm/libdevice/libdevice.10.bc";
}

/// TL_NVPTX_TIMES=1: each stage's wall time on stderr ("nvptx-time: <stage> <ms>"), to profile
/// cold compiles.
class StageTimer {
public:
  StageTimer() : on_(std::getenv("TL_NVPTX_TIMES") != nullptr), t_(Clock::now()) {}
  /// `m`, where given: its instruction count after the stage follows the time.
  void lap(const char *stage, const llvm::Module *m = nullptr) {
    if (!on_)
      return;
    const auto now = Clock::now();
    size_t instructions = 0;
    if (m)
      for (const llvm::Function &f : *m)
        instructions += f.getInstructionCount();
    std::fprintf(stderr, "nvptx-time: %s %.2f ms", stage,
                 std::chrono::duration<double, std::milli>(now - t_).count());
    std::fprintf(stderr, m ? " (%zu instructions)\n" : "\n", instructions);
    t_ = now;
  }

private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  Clock::time_point t_;
};

/// TL_NVPTX_DUMP_LLVM=PREFIX: the module before and after O3 as PREFIX.<arch>.pre-O3.ll and
/// .post-O3.ll, to see what the optimizer gets and what it costs (opt -time-passes).
void dump_llvm(const llvm::Module &m, const std::string &arch, const char *stage) {
  const char *prefix = std::getenv("TL_NVPTX_DUMP_LLVM");
  if (!prefix || !*prefix)
    return;
  std::error_code ec;
  llvm::raw_fd_ostream out(std::string(prefix) + "." + arch + "." + stage + ".ll", ec);
  if (!ec)
    m.print(out, nullptr);
}

std::unique_ptr<llvm::TargetMachine> target_machine(const std::string &arch, std::string *error) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string e;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(kTriple, e);
  if (!target) {
    *error = "nvptx: LLVM has no NVPTX target: " + e;
    return nullptr;
  }
  llvm::TargetOptions to;
  to.AllowFPOpFusion = llvm::FPOpFusion::Strict; // fma only where the IR says fma
  // Codegen at Default, not Aggressive: ptxas allocates registers and schedules again anyway
  // (registers after ptxas within 2 on the bench's GEMMs), and LLVM's PTX emission takes half
  // the time (a 32x32 GEMM: 18 -> 9 ms).
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      kTriple, arch, "", to, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Default));
  if (!tm)
    *error = "nvptx: no target machine for " + arch;
  return tm;
}

bool uses_libdevice(const llvm::Module &m) {
  for (const llvm::Function &f : m)
    if (f.isDeclaration() && f.getName().starts_with("__nv_"))
      return true;
  return false;
}

std::string link_libdevice(llvm::Module &m, const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return "nvptx: cannot read libdevice '" + path + "' (" + buffer.getError().message() +
           "): install the CUDA toolkit, set TL_CUDA_PATH, or pass --target-option libdevice=PATH";
  auto lib = llvm::parseBitcodeFile(**buffer, m.getContext());
  if (!lib)
    return "nvptx: cannot parse libdevice '" + path + "': " + llvm::toString(lib.takeError());
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded))
    return "nvptx: linking libdevice '" + path + "' failed";
  // Only the kernels are entry points: the math functions inline and disappear.
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && f.getName().starts_with("__nv_"))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0)); // no flush to zero
  return {};
}

/// TL_NVPTX_TIME_PASSES=1: LLVM's -time-passes report of O3 and of PTX emission on stderr.
bool time_passes() { return std::getenv("TL_NVPTX_TIME_PASSES") != nullptr; }

void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::TimePassesHandler timing(time_passes());
  timing.setOutStream(llvm::errs());
  timing.registerCallbacks(callbacks);
  llvm::PassBuilder pb(&tm, llvm::PipelineTuningOptions(), std::nullopt, &callbacks);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

} // namespace

std::string parse_options(const std::map<std::string, std::string> &options, CompileOptions &out) {
  for (const auto &[key, value] : options) {
    if (key == "arch") {
      out.archs.clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = value.find(',', start);
        const std::string a =
            value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        // Those LLVM 19 emits with what the lowering needs (cp.async, bf16 mma: sm_80 up).
        static const char *const kArchs[] = {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};
        if (std::find(std::begin(kArchs), std::end(kArchs), a) == std::end(kArchs))
          return "nvptx: target option arch: '" + a +
                 "' is not one the nvptx target builds (sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)";
        out.archs.push_back(a);
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (key == "num_warps") {
      if (value == "auto") {
        out.num_warps = 0;
        continue;
      }
      char *end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (!end || *end || n < 1 || n > 32 || (n & (n - 1)))
        return "nvptx: target option num_warps: '" + value +
               "' is not auto or a power of two in 1..32";
      out.num_warps = static_cast<int>(n);
    } else if (key == "cubin") {
      if (value != "auto" && value != "on" && value != "off")
        return "nvptx: target option cubin: '" + value + "' is not auto, on or off";
      out.cubin = value;
    } else if (key == "libdevice") {
      out.libdevice = value;
    } else {
      return "nvptx: unknown target option '" + key +
             "' (known: arch, num_warps, cubin, libdevice)";
    }
  }
  return {};
}

std::vector<passes::PassInfo> planning_passes(const CompileOptions &options) {
  const int warps = options.num_warps;
  return {{"nvptx-plan-layouts", "nvptx: the thread layout of every tile (nvptx.layout)",
           [warps](ir::Kernel &k) { return plan_layouts(k, choose_num_warps(k, warps)); }}};
}

std::string emit_ptx(const ir::Module &module, const CompileOptions &options,
                     const std::string &arch, std::string *error) {
  return emit_ptx_with_info(module, options, arch, nullptr, error);
}

std::string emit_ptx_with_info(const ir::Module &module, const CompileOptions &options,
                               const std::string &arch, std::vector<Kernel> *infos,
                               std::string *error) {
  StageTimer timer;
  std::unique_ptr<ir::Module> copy = options.planned ? nullptr : ir::clone(module);
  if (copy)
    for (auto &k : copy->kernels())
      plan_layouts(*k, choose_num_warps(*k, options.num_warps));
  const ir::Module &planned = copy ? *copy : module;
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(arch, error);
  if (!tm)
    return {};
  llvm::LLVMContext ctx;
  llvm::Module m("tl", ctx);
  m.setTargetTriple(kTriple);
  m.setDataLayout(tm->createDataLayout());
  try {
    for (auto &k : planned.kernels()) {
      Kernel info = KernelEmitter(*k, m, choose_num_warps(*k, options.num_warps), arch).run();
      if (infos)
        infos->push_back(info);
    }
  } catch (const LoweringError &e) {
    *error = e.what();
    return {};
  }
  timer.lap("target+lower", &m);
  if (uses_libdevice(m)) {
    if (std::string e =
            link_libdevice(m, options.libdevice.empty() ? default_libdevice() : options.libdevice);
        !e.empty()) {
      *error = e;
      return {};
    }
  }
  std::string verify;
  llvm::raw_string_ostream vs(verify);
  if (llvm::verifyModule(m, &vs)) {
    *error = "nvptx: internal error: invalid NVVM IR: " + verify;
    return {};
  }
  timer.lap("libdevice+verify");
  dump_llvm(m, arch, "pre-O3");
  optimize(m, *tm);
  dump_llvm(m, arch, "post-O3");
  timer.lap("O3", &m);
  // Asserts that LLVM proved never fail (a constant loop step, an index in range) leave the status
  // parameter unused: without asserts the device sets up no status word before the launch and
  // copies none back after it, which on the H200 left ~4 us before and ~10 us after every GEMM.
  if (infos)
    for (Kernel &info : *infos)
      if (const llvm::Function *f = m.getFunction(info.name);
          f && f->arg_size() && f->getArg(f->arg_size() - 1)->use_empty())
        info.asserts.clear();
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    *error = "nvptx: the target machine cannot emit PTX";
    return {};
  }
  llvm::TimePassesIsEnabled = time_passes();
  pm.run(m);
  if (llvm::TimePassesIsEnabled)
    llvm::reportAndResetTimings(&llvm::errs());
  timer.lap("emit-ptx");
  return std::string(ptx.str());
}

std::string target_identity(const CompileOptions &options) {
  std::string id = "nvptx llvm " LLVM_VERSION_STRING " src " TL_NVPTX_SOURCE_HASH " warps " +
                   (options.num_warps ? std::to_string(options.num_warps) : "auto") + " archs";
  for (const std::string &a : options.archs)
    id += " " + a;
  const std::string lib = options.libdevice.empty() ? default_libdevice() : options.libdevice;
  std::error_code ec;
  const auto size = std::filesystem::file_size(lib, ec);
  id += " cubin " + options.cubin + " libdevice " + lib + " " +
        (ec ? std::string("absent") : std::to_string(size));
  return id;
}

} // namespace tl::nvptx
