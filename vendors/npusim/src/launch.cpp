// Executables and launches of the npusim plugin: the per-launch wrapper program around a kernel's
// TNPU code, and the simulator process that runs it.
// SPDX-License-Identifier: Apache-2.0
#include "npusim_plugin.h"
#include "worker_protocol.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

extern char **environ;

namespace tl::npusim {
namespace {

using npu::isa::Instr;
using npu::isa::Opcode;

// Wrapper registers (tnpu.h): r24..r26 program ids, r27 linear id, r28 programs, r29 cores,
// r30 scratch, r31 the failed assert (tnpu::kAssertReg).
constexpr uint8_t kLin = 27, kTotal = 28, kCores = 29, kTmp = 30;

Instr make(Opcode op, uint8_t a = 0, uint8_t b = 0, uint8_t c = 0, int32_t imm = 0) {
  Instr in;
  in.op = op;
  in.slot[0] = a, in.slot[1] = b, in.slot[2] = c;
  in.imm = imm;
  return in;
}

/// rd = v (li, plus lih when v does not fit a sign-extended 32-bit immediate).
void load_const(std::vector<Instr> &out, uint8_t rd, uint64_t v) {
  const auto lo = static_cast<int32_t>(static_cast<uint32_t>(v));
  out.push_back(make(Opcode::Li, rd, 0, 0, lo));
  if (static_cast<uint64_t>(static_cast<int64_t>(lo)) != v)
    out.push_back(make(Opcode::Lih, rd, 0, 0, static_cast<int32_t>(v >> 32)));
}

/// A branch at `from` to `to`: offsets are in instructions, relative to the branch.
void patch(std::vector<Instr> &code, size_t from, size_t to) {
  code[from].imm = static_cast<int32_t>(static_cast<int64_t>(to) - static_cast<int64_t>(from));
}

uint64_t bound_value(const tnpu::Binding &b, const tl_vendor_launch &l, const Device &d) {
  const tl_vendor_arg &a = l.args[b.param];
  switch (b.kind) {
  case tnpu::BindKind::Address:
    return static_cast<Device::Buffer *>(a.buffer)->address + a.offset_bytes;
  case tnpu::BindKind::Shape:
    return static_cast<uint64_t>(a.shape[b.dim]);
  case tnpu::BindKind::StrideBytes: {
    static const int kSize[] = {1, 1, 2, 4, 8, 1, 2, 4, 2, 2, 4, 8, 1, 1};
    return static_cast<uint64_t>(a.strides[b.dim] * kSize[a.dtype < 14 ? a.dtype : 0]);
  }
  case tnpu::BindKind::ScalarInt:
    return static_cast<uint64_t>(a.i);
  case tnpu::BindKind::ScalarF32: {
    const float f = static_cast<float>(a.f);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  case tnpu::BindKind::Grid:
    return l.grid[b.dim];
  }
  return 0;
}

/// The bound registers, then the kernel body with its patched launch values; its `halt`s jump to
/// the end.
void emit_body(std::vector<Instr> &out, const tnpu::Kernel &k, const tl_vendor_launch &l,
               const Device &d) {
  for (const tnpu::Binding &b : k.bindings)
    if (b.patch < 0)
      load_const(out, b.reg, bound_value(b, l, d));
  const size_t body = out.size();
  out.insert(out.end(), k.program.begin(), k.program.end());
  for (const tnpu::Binding &b : k.bindings)
    if (b.patch >= 0) { // li + lih in the body (checked by parse_code)
      const uint64_t v = bound_value(b, l, d);
      out[body + b.patch].imm = static_cast<int32_t>(static_cast<uint32_t>(v));
      out[body + b.patch + 1].imm = static_cast<int32_t>(v >> 32);
    }
  const size_t next = out.size();
  for (size_t i = body; i < next; ++i)
    if (out[i].op == Opcode::Halt) {
      out[i] = make(Opcode::Jmp);
      patch(out, i, next);
    }
}

/// Every core runs: for linear id = coreid, +ncores, ... < programs: split it into program ids
/// (by carrying, the ISA has no division), set the bound registers, run the body (its `halt`s
/// jump to the end of the program), fence. See tnpu.h for the register conventions.
/// A persistent kernel (tnpu::Kernel::persistent) loops over the core's programs itself: the
/// wrapper only sets the bound registers, runs it once and fences.
std::vector<Instr> wrap(const tnpu::Kernel &k, const tl_vendor_launch &l, const Device &d) {
  std::vector<Instr> out;
  const uint64_t total = l.grid[0] * l.grid[1] * l.grid[2];
  if (k.persistent) {
    out.push_back(make(Opcode::Li, tnpu::kAssertReg));
    emit_body(out, k, l, d);
    out.push_back(make(Opcode::Fence));
    out.push_back(make(Opcode::Halt));
    return out;
  }
  out.push_back(make(Opcode::CoreId, kLin));
  out.push_back(make(Opcode::Mov, tnpu::kPidReg, kLin));
  out.push_back(make(Opcode::Li, tnpu::kPidReg + 1));
  out.push_back(make(Opcode::Li, tnpu::kPidReg + 2));
  load_const(out, kTotal, total);
  out.push_back(make(Opcode::NCores, kCores));
  out.push_back(make(Opcode::Li, tnpu::kAssertReg));
  const size_t loop = out.size();
  out.push_back(make(Opcode::Bge, kLin, kTotal)); // -> done
  for (int axis = 0; axis < 2; ++axis) {
    load_const(out, kTmp, l.grid[axis]);
    const size_t norm = out.size();
    out.push_back(make(Opcode::Blt, tnpu::kPidReg + axis, kTmp)); // -> carried
    out.push_back(make(Opcode::Sub, tnpu::kPidReg + axis, tnpu::kPidReg + axis, kTmp));
    out.push_back(make(Opcode::Addi, tnpu::kPidReg + axis + 1, tnpu::kPidReg + axis + 1, 0, 1));
    out.push_back(make(Opcode::Jmp));
    patch(out, out.size() - 1, norm);
    patch(out, norm, out.size());
  }
  emit_body(out, k, l, d);
  out.push_back(make(Opcode::Fence));
  out.push_back(make(Opcode::Add, kLin, kLin, kCores));
  out.push_back(make(Opcode::Add, tnpu::kPidReg, tnpu::kPidReg, kCores));
  out.push_back(make(Opcode::Jmp));
  patch(out, out.size() - 1, loop);
  patch(out, loop, out.size());
  out.push_back(make(Opcode::Halt));
  return out;
}

/// Writes the request with SIGPIPE blocked in this thread: a simulator process that died before
/// reading it (killed, crashed at start) is an EPIPE for this launch, never a signal that ends
/// the host process.
bool send_request(int fd, const std::string &bytes) {
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE);
  const bool sent = wire::write_all(fd, bytes);
  if (!sent && errno == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe_only, nullptr, &zero); // the SIGPIPE this write raised, not the host's
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return sent;
}

/// How a simulator process ended, for the launch's error.
std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

/// Runs the request in a fresh simulator process.
Error run_worker(const Device &d, const wire::Request &req, wire::Reply &reply) {
  int in[2], back[2];
  if (pipe2(in, O_CLOEXEC) != 0)
    return {TL_STATUS_INTERNAL, "pipe failed"};
  if (pipe2(back, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return {TL_STATUS_INTERNAL, "pipe failed"};
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, d.hbm->fd(), wire::kHbmFd);
  posix_spawn_file_actions_adddup2(&fa, back[1], wire::kReplyFd);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> env_strings;
  for (char **e = environ; *e; ++e)
    env_strings.emplace_back(*e);
  env_strings.emplace_back("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1");
  std::vector<char *> envp;
  for (auto &s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string path = d.worker_path;
  char *argv[] = {path.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, path.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]), close(back[1]);
  if (rc != 0) {
    close(in[1]), close(back[0]);
    return {TL_STATUS_UNAVAILABLE, "cannot start " + path + ": " + std::strerror(rc)};
  }
  const bool sent = send_request(in[1], wire::encode(req));
  close(in[1]);
  const std::string bytes = wire::read_all(back[0]);
  close(back[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!sent || !wire::decode(bytes, reply))
    return {TL_STATUS_INTERNAL,
            "the simulator process " + path + " " + describe_exit(status) + " before replying"};
  return {};
}

void write_file(const std::string &path, const std::string &text, const Host &host) {
  std::ofstream f(path);
  f << text;
  if (!f)
    host.log(1, "cannot write " + path);
}

Error run_launch(Device &d, const KernelCode &k, const tl_vendor_launch &l) {
  wire::Request req;
  req.config_path = d.config_path;
  req.trace = d.trace_dir.empty() ? 0 : 1;
  for (const Instr &in : wrap(k.code, l, d))
    req.program.push_back(npu::isa::encode(in));
  for (uint32_t i = 0; i < l.arg_count; ++i)
    if (l.args[i].kind == TL_PARAM_TENSOR && l.args[i].buffer) {
      const auto *b = static_cast<const Device::Buffer *>(l.args[i].buffer);
      req.ranges.push_back({b->address, b->size});
    }
  std::lock_guard lock(d.launch_mu);
  wire::Reply reply;
  if (Error e = run_worker(d, req, reply); !e.ok())
    return e;
  const uint64_t n = ++d.launches;
  d.advance(double(reply.cycles) / d.config.clock * 1e9);
  if (!d.trace_dir.empty()) {
    const std::string base = d.trace_dir + "/launch-" + std::to_string(n) + "-" + k.name;
    write_file(base + ".trace.json", reply.trace_json, d.host());
    write_file(base + ".stats.json", reply.stats_json, d.host());
  }
  if (reply.status != 0)
    return {TL_STATUS_ABORTED,
            "kernel " + k.name + " failed on the simulated TNPU: " + reply.message};
  for (size_t core = 0; core < reply.assert_regs.size(); ++core)
    if (const uint64_t a = reply.assert_regs[core]; a != 0)
      return {TL_STATUS_ABORTED,
              "kernel " + k.name + ": assertion failed: " +
                  (a <= k.code.asserts.size() ? k.code.asserts[a - 1] : "(unknown assert)") +
                  " (on core " + std::to_string(core) + ")"};
  return {};
}

} // namespace

Error Device::load(const tl_vendor_executable_image &image, std::unique_ptr<Executable> &out) {
  if (std::strcmp(image.target, tnpu::kTarget) != 0)
    return {TL_STATUS_INCOMPATIBLE,
            std::string("executable is for target '") + image.target + "', the device runs 'tnpu'"};
  std::vector<tnpu::Kernel> code;
  std::string error;
  if (!tnpu::parse_code(image.code, image.code_size, code, error))
    return {TL_STATUS_DATA_LOSS, error};
  if (code.size() != image.kernel_count)
    return {TL_STATUS_DATA_LOSS, "the code has " + std::to_string(code.size()) +
                                     " kernels, the table " + std::to_string(image.kernel_count)};
  auto exe = std::make_unique<Executable>();
  for (uint32_t i = 0; i < image.kernel_count; ++i) {
    const tl_vendor_kernel &k = image.kernels[i];
    exe::KernelInfo info;
    info.name = k.name;
    for (uint32_t p = 0; p < k.param_count; ++p)
      info.params.push_back(
          {k.params[p].name ? k.params[p].name : "",
           k.params[p].kind == TL_PARAM_TENSOR ? exe::ParamKind::Tensor : exe::ParamKind::Scalar,
           TL_DTYPE_I1, static_cast<int>(k.params[p].rank)});
    for (const tnpu::Binding &b : code[i].bindings)
      if (std::string e = tnpu::check_binding(b, info); !e.empty())
        return {TL_STATUS_DATA_LOSS, "kernel " + info.name + ": " + e};
    exe->kernels.push_back({k.name, std::move(code[i])});
  }
  out = std::move(exe);
  return {};
}

Error Device::launch(WorkQueue &stream, Executable &exe, const tl_vendor_launch &launch) {
  if (launch.grid[0] == 0 || launch.grid[1] == 0 || launch.grid[2] == 0)
    return {};
  // The task owns copies of the arguments (the caller's may not outlive this call).
  std::vector<tl_vendor_arg> args(launch.args, launch.args + launch.arg_count);
  tl_vendor_launch l = launch;
  // The executable may be freed while the launch is queued.
  auto kernel = std::make_shared<KernelCode>(exe.kernels.at(launch.kernel));
  stream.enqueue([this, kernel, l, args = std::move(args)]() mutable {
    l.args = args.data();
    return run_launch(*this, *kernel, l);
  });
  return {};
}

} // namespace tl::npusim
