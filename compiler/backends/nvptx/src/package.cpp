// The nvptx code blob (format/nvptx): a PTX image per architecture, a cubin per architecture
// where the toolkit's ptxas is installed, and each kernel's launch metadata.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/nvptx.h"

#include "codegen.h"
#include "tl/format/nvptx_code.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace tl::nvptx {
namespace {

std::string ptxas_path() {
  const char *root = std::getenv("TL_CUDA_PATH");
  return std::string(root && *root ? root : "/usr/local/cuda") + "/bin/ptxas";
}

/// The cubin of `ptx` for `arch` from the toolkit's ptxas; "" with `error` when ptxas fails
/// (its messages included).
std::string assemble(const std::string &ptx, const std::string &arch, std::string *error) {
  // $TMPDIR where set (a sandbox or a read-only /tmp), as ptxas itself does.
  const char *tmp = std::getenv("TMPDIR");
  const std::string root = tmp && *tmp ? tmp : "/tmp";
  std::string templ = root + "/tl-ptxas-XXXXXX";
  char *dir = mkdtemp(templ.data());
  if (!dir) {
    *error = "nvptx: cannot make a temporary folder for ptxas in " + root + " (" +
             std::strerror(errno) + ")";
    return {};
  }
  const std::string in = std::string(dir) + "/k.ptx", out = std::string(dir) + "/k.cubin",
                    log = std::string(dir) + "/log";
  std::ofstream(in, std::ios::binary) << ptx;
  const std::string tool = ptxas_path(), gpu = "-arch=" + arch;
  const char *argv[] = {tool.c_str(), gpu.c_str(), "-O3", in.c_str(), "-o", out.c_str(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int status = -1;
  const int rc = posix_spawn(&pid, tool.c_str(), &fa, nullptr, const_cast<char **>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc == 0)
    waitpid(pid, &status, 0);
  std::ifstream cubin(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(cubin)), std::istreambuf_iterator<char>());
  std::ifstream messages(log);
  const std::string text((std::istreambuf_iterator<char>(messages)),
                         std::istreambuf_iterator<char>());
  for (const std::string &f : {in, out, log})
    std::remove(f.c_str());
  rmdir(dir);
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes.empty()) {
    *error = "nvptx: ptxas " + gpu + " failed: " + (rc ? std::string("cannot run ") + tool : text);
    return {};
  }
  return bytes;
}

} // namespace

namespace {

/// One architecture's images (PTX, and the cubin where asked) and launch metadata.
struct ArchImages {
  std::vector<Image> images;
  std::vector<Kernel> kernels;
  std::string error;
};

ArchImages compile_arch(const ir::Module &module, const CompileOptions &options,
                        const std::string &arch) {
  ArchImages out;
  const std::string ptx = emit_ptx_with_info(module, options, arch, &out.kernels, &out.error);
  if (ptx.empty())
    return out;
  Image image;
  image.kind = Image::Kind::Ptx;
  image.sm = static_cast<uint32_t>(std::stoul(arch.substr(3)));
  image.arch_specific = arch.back() == 'a';
  image.bytes.assign(ptx.begin(), ptx.end());
  out.images.push_back(image);
  // A cubin spares the driver's JIT at load; without the toolkit the PTX alone serves.
  if (options.cubin == "off" ||
      (options.cubin == "auto" && access(ptxas_path().c_str(), X_OK) != 0))
    return out;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string cubin = assemble(ptx, arch, &out.error);
  if (std::getenv("TL_NVPTX_TIMES")) // as pipeline.cpp's stages
    std::fprintf(
        stderr, "nvptx-time: ptxas %.2f ms\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (cubin.empty()) {
    out.images.clear();
    return out;
  }
  image.kind = Image::Kind::Cubin;
  image.bytes.assign(cubin.begin(), cubin.end());
  out.images.push_back(std::move(image));
  return out;
}

} // namespace

std::vector<uint8_t> compile(const ir::Module &module, const CompileOptions &options,
                             std::string *error) {
  // Each architecture on its own thread (its own LLVMContext; ptxas a process of its own): a
  // cold compile for sm_80 + sm_90a takes the slower one's time, not the sum.
  std::vector<ArchImages> per_arch(options.archs.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < options.archs.size(); ++i)
    threads.emplace_back([&, i] { per_arch[i] = compile_arch(module, options, options.archs[i]); });
  if (!options.archs.empty())
    per_arch[0] = compile_arch(module, options, options.archs[0]);
  for (std::thread &t : threads)
    t.join();
  Code code;
  for (ArchImages &a : per_arch) {
    if (a.images.empty()) {
      *error = a.error;
      return {};
    }
    // The kernels are the same for every architecture but for their asserts: one arch's code
    // may prove all of them away and another's not, and then the launch needs a status word.
    if (code.kernels.empty())
      code.kernels = a.kernels;
    else
      for (size_t k = 0; k < code.kernels.size(); ++k)
        if (code.kernels[k].asserts.empty())
          code.kernels[k].asserts = a.kernels[k].asserts;
    for (Image &im : a.images)
      code.images.push_back(std::move(im));
  }
  return serialize_code(code);
}

} // namespace tl::nvptx
