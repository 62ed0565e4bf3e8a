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
#include <optional>
#include <pthread.h>
#include <signal.h>
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

/// A folder for ptxas's output and messages under $TMPDIR (a sandbox or a read-only /tmp), as
/// ptxas itself does; removed with its files on destruction.
struct ScratchDir {
  std::string path, error;
  ScratchDir() {
    const char *tmp = std::getenv("TMPDIR");
    const std::string root = tmp && *tmp ? tmp : "/tmp";
    std::string templ = root + "/tl-ptxas-XXXXXX";
    if (mkdtemp(templ.data()))
      path = templ;
    else
      error = "nvptx: cannot make a temporary folder for ptxas in " + root + " (" +
              std::strerror(errno) + ")";
  }
  ~ScratchDir() {
    if (path.empty())
      return;
    for (const char *f : {"/k.ptx", "/k.cubin", "/log"})
      std::remove((path + f).c_str());
    rmdir(path.c_str());
  }
  std::string file(const char *name) const { return path + "/" + name; }
};

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Runs ptxas for `arch` on `input` (a file, or /dev/stdin when `stdin_fd` >= 0) into the
/// scratch folder; its pid, or -1 with `error`.
pid_t spawn_ptxas(const ScratchDir &dir, const std::string &arch, const std::string &input,
                  int stdin_fd, std::string *error) {
  const std::string tool = ptxas_path(), gpu = "-arch=" + arch, out = dir.file("k.cubin"),
                    log = dir.file("log");
  const char *argv[] = {tool.c_str(), gpu.c_str(), "-O3",  input.c_str(),
                        "-o",         out.c_str(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (stdin_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, tool.c_str(), &fa, nullptr, const_cast<char **>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    *error = "nvptx: cannot run " + tool + " (" + std::strerror(rc) + ")";
    return -1;
  }
  return pid;
}

/// The cubin ptxas left, or "" with `error` (its messages) when it failed.
std::string collect(pid_t pid, const ScratchDir &dir, const std::string &arch, std::string *error) {
  int status = -1;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string bytes = read_file(dir.file("k.cubin"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes.empty()) {
    *error = "nvptx: ptxas -arch=" + arch + " failed: " + read_file(dir.file("log"));
    return {};
  }
  return bytes;
}

/// The cubin of `ptx` for `arch` from the toolkit's ptxas, reading a file; "" with `error` when
/// ptxas fails (its messages included).
std::string assemble(const std::string &ptx, const std::string &arch, std::string *error) {
  ScratchDir dir;
  if (dir.path.empty()) {
    *error = dir.error;
    return {};
  }
  std::ofstream(dir.file("k.ptx"), std::ios::binary) << ptx;
  const pid_t pid = spawn_ptxas(dir, arch, dir.file("k.ptx"), -1, error);
  return pid < 0 ? std::string() : collect(pid, dir, arch, error);
}

/// ptxas started before its PTX exists, blocked reading a pipe (/dev/stdin): its own start-up
/// (loading a 40 MB program, ~10 ms of a 50 ms run) overlaps LLVM's work on the kernel. `finish`
/// returns "" where this route failed, and the caller assembles from a file instead, which also
/// gives ptxas's messages for PTX it refuses.
class EarlyPtxas {
public:
  explicit EarlyPtxas(const std::string &arch) : arch_(arch) {
    int fds[2];
    if (dir_.path.empty() || pipe2(fds, O_CLOEXEC) != 0) // the write end stays out of children
      return;
    std::string error;
    pid_ = spawn_ptxas(dir_, arch, "/dev/stdin", fds[0], &error);
    close(fds[0]);
    if (pid_ < 0)
      close(fds[1]);
    else
      write_fd_ = fds[1];
  }
  EarlyPtxas(const EarlyPtxas &) = delete;
  EarlyPtxas &operator=(const EarlyPtxas &) = delete;
  ~EarlyPtxas() { finish({}); } // an empty input: ptxas fails at once and is reaped

  std::string finish(const std::string &ptx) {
    if (pid_ < 0)
      return {};
    // A ptxas that exits early must not end this process with SIGPIPE: the signal is blocked on
    // this thread while it writes, and one it raised is taken back before unblocking.
    sigset_t pipe_signal, old;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
    bool broken = false;
    for (size_t done = 0; done < ptx.size();) {
      const ssize_t n = write(write_fd_, ptx.data() + done, ptx.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        broken = errno == EPIPE;
        break;
      }
      done += static_cast<size_t>(n);
    }
    close(write_fd_);
    if (broken) {
      const timespec now{0, 0};
      sigtimedwait(&pipe_signal, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    std::string error;
    std::string cubin = collect(pid_, dir_, arch_, &error);
    pid_ = -1;
    return ptx.empty() ? std::string() : cubin;
  }

private:
  std::string arch_;
  ScratchDir dir_;
  pid_t pid_ = -1;
  int write_fd_ = -1;
};

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
  // A cubin spares the driver's JIT at load; without the toolkit the PTX alone serves.
  const bool want_cubin =
      options.cubin == "on" || (options.cubin == "auto" && access(ptxas_path().c_str(), X_OK) == 0);
  std::optional<EarlyPtxas> early;
  if (want_cubin)
    early.emplace(arch);
  const std::string ptx = emit_ptx_with_info(module, options, arch, &out.kernels, &out.error);
  if (ptx.empty())
    return out;
  Image image;
  image.kind = Image::Kind::Ptx;
  image.sm = static_cast<uint32_t>(std::stoul(arch.substr(3)));
  image.arch_specific = arch.back() == 'a';
  image.bytes.assign(ptx.begin(), ptx.end());
  out.images.push_back(image);
  if (!want_cubin)
    return out;
  const auto t0 = std::chrono::steady_clock::now();
  std::string cubin = early->finish(ptx);
  if (cubin.empty())
    cubin = assemble(ptx, arch, &out.error);
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
