// The llvm-cpu blob's loader: ORC LLJIT linking and the host side of the calling convention.
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/llvm_cpu_loader.h"

#include "tl/reference/numerics.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <cstdio>
#include <sstream>

namespace tl::llvm_cpu {
namespace {

void init_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

extern "C" void host_report(void *host, const char *message, int64_t x, int64_t y, int64_t z,
                            int64_t lane, int64_t index) {
  static_cast<LaunchHost *>(host)->report(message, x, y, z, lane, index);
}

extern "C" void host_print(void *host, const char *prefix, int32_t kind, const void *values,
                           int64_t n, int32_t is_tile, int64_t x, int64_t y, int64_t z) {
  std::ostringstream s;
  s.precision(9);
  s << "program (" << x << ", " << y << ", " << z << "):";
  if (prefix && *prefix)
    s << " " << prefix;
  s << (is_tile ? " [" : " ");
  for (int64_t i = 0; i < n; ++i) {
    if (i)
      s << ", ";
    if (kind == 2)
      s << static_cast<const double *>(values)[i];
    else
      s << static_cast<const int64_t *>(values)[i];
  }
  s << (is_tile ? "]" : "");
  static_cast<LaunchHost *>(host)->print(s.str());
}

tl::numerics::FloatFormat f8_format(int32_t format) {
  return format == 0 ? tl::numerics::FloatFormat::F8E4M3 : tl::numerics::FloatFormat::F8E5M2;
}

extern "C" double host_f8_round(int32_t format, int32_t mode, double x) {
  static const tl::numerics::Rounding modes[] = {
      tl::numerics::Rounding::NearestEven, tl::numerics::Rounding::TowardZero,
      tl::numerics::Rounding::Down, tl::numerics::Rounding::Up};
  return tl::numerics::round_to(f8_format(format), x, modes[mode & 3]);
}

extern "C" int32_t host_f8_encode(int32_t format, double x) {
  return static_cast<int32_t>(tl::numerics::encode(f8_format(format), x));
}

extern "C" double host_f8_decode(int32_t format, int32_t bits) {
  return tl::numerics::decode(f8_format(format), static_cast<uint64_t>(bits) & 0xff);
}

class JitProgram : public LoadedProgram {
public:
  explicit JitProgram(std::unique_ptr<llvm::orc::LLJIT> jit) : jit_(std::move(jit)) {}
  tl_cpu_kernel_fn find(const std::string &name) const override {
    auto sym = jit_->lookup("tl_kernel_" + name);
    if (!sym) {
      llvm::consumeError(sym.takeError());
      return nullptr;
    }
    return sym->toPtr<tl_cpu_kernel_fn>();
  }

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

} // namespace

bool LaunchHost::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}
std::string LaunchHost::first_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_error_;
}
void LaunchHost::report(const char *message, int64_t x, int64_t y, int64_t z, int64_t lane,
                        int64_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_)
    return;
  failed_ = true;
  first_error_ = message;
  if (index >= 0 || lane >= 0)
    first_error_ += " (";
  if (index >= 0 || (index < -1))
    first_error_ += "index " + std::to_string(index) + (lane >= 0 ? ", " : "");
  if (lane >= 0)
    first_error_ += "lane " + std::to_string(lane);
  if (index >= 0 || lane >= 0)
    first_error_ += ")";
  first_error_ += " in program (" + std::to_string(x) + ", " + std::to_string(y) + ", " +
                  std::to_string(z) + ")";
}
void LaunchHost::print(const std::string &line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (print_sink_)
    *print_sink_ += line + "\n";
  else
    std::printf("%s\n", line.c_str());
}

std::unique_ptr<LoadedProgram> load_object(const void *object, size_t size, std::string *error) {
  init_native_target();
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) {
    *error = llvm::toString(jit.takeError());
    return nullptr;
  }
  auto &jd = (*jit)->getMainJITDylib();
  const auto flags = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
  llvm::orc::SymbolMap host = {{(*jit)->mangleAndIntern("tl_cpu_report_error"),
                                {llvm::orc::ExecutorAddr::fromPtr(&host_report), flags}},
                               {(*jit)->mangleAndIntern("tl_cpu_print"),
                                {llvm::orc::ExecutorAddr::fromPtr(&host_print), flags}},
                               {(*jit)->mangleAndIntern("tl_cpu_f8_round"),
                                {llvm::orc::ExecutorAddr::fromPtr(&host_f8_round), flags}},
                               {(*jit)->mangleAndIntern("tl_cpu_f8_encode"),
                                {llvm::orc::ExecutorAddr::fromPtr(&host_f8_encode), flags}},
                               {(*jit)->mangleAndIntern("tl_cpu_f8_decode"),
                                {llvm::orc::ExecutorAddr::fromPtr(&host_f8_decode), flags}}};
  if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(host)))) {
    *error = llvm::toString(std::move(err));
    return nullptr;
  }
  // libm and libc (expf, tanhf, memcpy, ...) from this process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) {
    *error = llvm::toString(gen.takeError());
    return nullptr;
  }
  jd.addGenerator(std::move(*gen));
  auto sleef = llvm::orc::DynamicLibrarySearchGenerator::Load(
      TL_CPU_VECTOR_MATH_LIBRARY, (*jit)->getDataLayout().getGlobalPrefix());
  if (!sleef) {
    *error = std::string("cannot load the SLEEF vector math library ") +
             TL_CPU_VECTOR_MATH_LIBRARY +
             " (Debian package libsleef3): " + llvm::toString(sleef.takeError());
    return nullptr;
  }
  jd.addGenerator(std::move(*sleef));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(static_cast<const char *>(object), size), "tl-llvm-cpu.o");
  if (auto err = (*jit)->addObjectFile(std::move(buffer))) {
    *error = "cannot link the object code: " + llvm::toString(std::move(err));
    return nullptr;
  }
  // The x86 features the code needs (TL_CPU_FEATURES_SYMBOL): an object compiled on another
  // machine would stop at an illegal instruction on a host without them.
  if (auto sym = (*jit)->lookup(TL_CPU_FEATURES_SYMBOL)) {
    static const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures(); // once a process
    llvm::SmallVector<llvm::StringRef, 32> needed;
    llvm::StringRef(sym->toPtr<const char *>()).split(needed, ',', -1, false);
    std::string missing;
    for (llvm::StringRef f : needed) {
      auto it = host.find(f.drop_front()); // "+avx2" -> avx2
      if (it == host.end() || !it->second)
        missing += (missing.empty() ? "" : ", ") + f.drop_front().str();
    }
    if (!missing.empty()) {
      *error = "the object code needs x86 features this host lacks (" + missing +
               "): it was compiled for another CPU; compile the kernel again on this machine";
      return nullptr;
    }
  } else {
    llvm::consumeError(sym.takeError()); // an object from before the symbol: not checked
  }
  return std::make_unique<JitProgram>(std::move(*jit));
}

} // namespace tl::llvm_cpu
