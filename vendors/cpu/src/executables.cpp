// Executables and launches of the cpu plugin: Tile IR run by the interpreter on oneTBB workers.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include "tl/backends/llvm_cpu.h"
#include "tl/interpreter/interpreter.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <string_view>
#include <vector>

namespace tl::cpu {
namespace {

/// What a launch needs, shared with queued launches so that freeing the executable is safe.
/// Either Tile IR run by the interpreter ("tlir") or native code ("llvm-cpu").
struct Program {
  std::unique_ptr<ir::Module> module;
  std::vector<const ir::Kernel *> kernels; // in the image's kernel order (tlir)
  std::unique_ptr<llvm_cpu::LoadedProgram> native;
  std::vector<tl_cpu_kernel_fn> entries;   // in the image's kernel order (llvm-cpu)
  std::vector<std::string> names;
  std::vector<uint32_t> param_counts;
};

struct Executable {
  Device *device = nullptr;
  std::shared_ptr<const Program> program;
};

static_assert(int(ir::ScalarKind::F8E5M2) == TL_DTYPE_F8E5M2, "tl_dtype and ScalarKind differ");

std::string param_type_str(const tl_vendor_param &p) {
  std::string dtype = p.dtype < TL_DTYPE_COUNT
                          ? std::string(ir::scalar_name(static_cast<ir::ScalarKind>(p.dtype)))
                          : "dtype " + std::to_string(p.dtype);
  if (p.kind == TL_PARAM_SCALAR)
    return dtype;
  return "tensor of rank " + std::to_string(p.rank) + " of " + dtype;
}

/// Checks one kernel's metadata against its Tile IR; returns a message on mismatch ("" if none).
std::string check_kernel(const tl_vendor_kernel &meta, const ir::Kernel &kernel) {
  const auto &params = kernel.body()->arguments();
  std::string where = "kernel '" + kernel.name() + "'";
  if (params.size() != meta.param_count)
    return where + " takes " + std::to_string(params.size()) + " parameters in its Tile IR, " +
           std::to_string(meta.param_count) + " in the executable's metadata";
  for (uint32_t i = 0; i < meta.param_count; ++i) {
    const ir::Type &t = params[i]->type();
    const tl_vendor_param &p = meta.params[i];
    bool tensor = p.kind == TL_PARAM_TENSOR;
    bool same = tensor == t.is_tensor() && p.dtype == static_cast<uint32_t>(t.elem()) &&
                (!tensor || p.rank == static_cast<uint32_t>(t.rank()));
    if (!same)
      return where + " parameter #" + std::to_string(i) + " is " + t.str() + " in its Tile IR, " +
             param_type_str(p) + " in the executable's metadata";
  }
  return "";
}

/// Parses, verifies and matches the image; fills `program` or returns the DATA_LOSS message.
std::string load_program(const tl_vendor_executable_image &image, Program &program) {
  if (!image.code || image.code_size == 0)
    return "the executable has no code";
  std::string_view text(static_cast<const char *>(image.code), image.code_size);
  ir::Diagnostics diags;
  program.module = ir::parse(text, "<executable>", diags);
  if (!program.module || !ir::verify(*program.module, diags))
    return "invalid Tile IR in the executable:\n" + diags.str();
  for (uint32_t k = 0; k < image.kernel_count; ++k) {
    const tl_vendor_kernel &meta = image.kernels[k];
    std::string name = meta.name ? meta.name : "";
    const ir::Kernel *kernel = program.module->find_kernel(name);
    if (!kernel)
      return "kernel '" + name + "' is not in the executable's Tile IR";
    if (std::string msg = check_kernel(meta, *kernel); !msg.empty())
      return msg;
    program.kernels.push_back(kernel);
  }
  return "";
}

/// Links llvm-cpu object code and resolves every kernel of the image.
std::string load_native(const tl_vendor_executable_image &image, Program &program) {
  if (!image.code || image.code_size == 0)
    return "the executable has no code";
  std::string error;
  program.native = llvm_cpu::load_object(image.code, image.code_size, &error);
  if (!program.native)
    return error;
  for (uint32_t k = 0; k < image.kernel_count; ++k) {
    const std::string name = image.kernels[k].name ? image.kernels[k].name : "";
    tl_cpu_kernel_fn fn = program.native->find(name);
    if (!fn)
      return "kernel '" + name + "' is not in the executable's object code";
    program.entries.push_back(fn);
  }
  return "";
}

/// Runs a native kernel over the grid on the device's workers; the first fault becomes ABORTED.
Error run_native_grid(tbb::task_arena &arena, tl_cpu_kernel_fn fn, const std::string &name,
                      const std::vector<tl_cpu_arg> &args, const std::array<int64_t, 3> &grid) {
  const int64_t total = grid[0] * grid[1] * grid[2];
  llvm_cpu::LaunchHost host;
  tl_cpu_launch launch{args.data(), {grid[0], grid[1], grid[2]}, &host};
  const int64_t workers = std::max(1, arena.max_concurrency());
  const int64_t grain = std::max<int64_t>(1, total / (workers * 8));
  std::atomic<bool> failed{false};
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, total, grain),
        [&](const tbb::blocked_range<int64_t> &r) {
          for (int64_t id = r.begin(); id < r.end(); ++id) {
            if (failed.load(std::memory_order_relaxed))
              return;
            if (fn(&launch, id % grid[0], (id / grid[0]) % grid[1], id / (grid[0] * grid[1])))
              failed.store(true, std::memory_order_relaxed);
          }
        },
        tbb::simple_partitioner());
  });
  if (!failed.load())
    return {};
  return {TL_STATUS_ABORTED, "cpu: kernel @" + name + " failed: " + host.first_error()};
}

tl_cpu_arg native_arg(const tl_vendor_arg &a) {
  tl_cpu_arg n{};
  if (a.kind == TL_PARAM_TENSOR) {
    n.data = a.buffer ? static_cast<char *>(static_cast<Buffer *>(a.buffer)->data) + a.offset_bytes
                      : nullptr;
    for (uint32_t d = 0; d < a.rank && d < TL_CPU_MAX_RANK; ++d) {
      n.shape[d] = a.shape[d];
      n.strides[d] = a.strides[d];
    }
  }
  n.i = a.i;
  n.f = a.f;
  return n;
}

/// The interpreter's argument for one launch argument; buffers are host memory.
interp::ArgValue to_arg(const tl_vendor_arg &a) {
  auto dtype = static_cast<ir::ScalarKind>(a.dtype);
  if (a.kind == TL_PARAM_TENSOR) {
    interp::TensorArg t;
    t.data = a.buffer ? static_cast<char *>(static_cast<Buffer *>(a.buffer)->data) + a.offset_bytes
                      : nullptr;
    t.dtype = dtype;
    t.shape.assign(a.shape, a.shape + a.rank);
    t.strides.assign(a.strides, a.strides + a.rank);
    return t;
  }
  if (ir::is_float(dtype))
    return a.f;
  return a.i;
}

/// Runs every program of the grid on the device's workers; the failure of the lowest-numbered
/// failing chunk is reported (later chunks are skipped once one has failed).
Error run_grid(tbb::task_arena &arena, const ir::Kernel &kernel,
               const std::vector<interp::ArgValue> &args, const std::array<int64_t, 3> &grid) {
  const int64_t total = grid[0] * grid[1] * grid[2];
  interp::RunOptions opts;
  opts.grid = grid;
  const int64_t workers = std::max(1, arena.max_concurrency());
  // A few chunks per worker balance uneven programs without paying per-call setup too often.
  const int64_t grain = std::max<int64_t>(1, total / (workers * 8));
  std::mutex mu;
  std::atomic<bool> failed{false};
  int64_t failed_at = std::numeric_limits<int64_t>::max();
  std::string message;
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, total, grain),
        [&](const tbb::blocked_range<int64_t> &r) {
          if (failed.load(std::memory_order_relaxed))
            return;
          interp::RunResult res = interp::run_programs(kernel, args, opts, r.begin(), r.end());
          if (res.ok)
            return;
          std::lock_guard lock(mu);
          failed.store(true, std::memory_order_relaxed);
          if (r.begin() < failed_at) {
            failed_at = r.begin();
            message = std::move(res.error);
          }
        },
        tbb::simple_partitioner());
  });
  if (!failed.load())
    return {};
  return {TL_STATUS_ABORTED, "cpu: kernel @" + kernel.name() + " failed: " + message};
}

/// The grid as interpreter ids; false if its program count does not fit in int64.
bool grid_of(const tl_vendor_launch &launch, std::array<int64_t, 3> &grid) {
  int64_t total = 1;
  for (int i = 0; i < 3; ++i) {
    if (launch.grid[i] > uint64_t(std::numeric_limits<int64_t>::max()))
      return false;
    grid[i] = static_cast<int64_t>(launch.grid[i]);
    if (__builtin_mul_overflow(total, grid[i], &total))
      return false;
  }
  return true;
}

} // namespace

tl_status executable_load(void *device, const tl_vendor_executable_image *image,
                          void **out_executable) {
  auto *d = static_cast<Device *>(device);
  const Plugin &plugin = *d->plugin;
  *out_executable = nullptr;
  return guarded(plugin, [&]() -> tl_status {
    std::string target = image->target ? image->target : "";
    if (target != "tlir" && target != "llvm-cpu")
      return plugin.status(TL_STATUS_INCOMPATIBLE, "cpu: the executable is for target '" + target +
                                                       "'; the cpu device accepts 'llvm-cpu' and "
                                                       "'tlir'");
    auto program = std::make_shared<Program>();
    for (uint32_t k = 0; k < image->kernel_count; ++k) {
      program->names.push_back(image->kernels[k].name ? image->kernels[k].name : "");
      program->param_counts.push_back(image->kernels[k].param_count);
    }
    const std::string msg = target == "tlir" ? load_program(*image, *program)
                                             : load_native(*image, *program);
    if (!msg.empty())
      return plugin.status(TL_STATUS_DATA_LOSS, "cpu: " + msg);
    *out_executable = new Executable{d, std::move(program)};
    return nullptr;
  });
}

void executable_free(void *device, void *executable) {
  delete static_cast<Executable *>(executable); // queued launches keep the program alive
}

tl_status stream_launch(void *stream, void *executable, const tl_vendor_launch *launch) {
  auto &s = *static_cast<Stream *>(stream);
  auto &exe = *static_cast<Executable *>(executable);
  const Plugin &plugin = *s.device()->plugin;
  return guarded(plugin, [&]() -> tl_status {
    if (launch->kernel >= exe.program->names.size())
      return plugin.status(TL_STATUS_NOT_FOUND, "cpu: no kernel #" +
                                                    std::to_string(launch->kernel) +
                                                    " in the executable");
    const std::string &name = exe.program->names[launch->kernel];
    const uint32_t params = exe.program->param_counts[launch->kernel];
    if (launch->arg_count != params)
      return plugin.status(TL_STATUS_INVALID_ARGUMENT,
                           "cpu: @" + name + " takes " + std::to_string(params) +
                               " arguments, got " + std::to_string(launch->arg_count));
    std::array<int64_t, 3> grid{};
    if (!grid_of(*launch, grid))
      return plugin.status(TL_STATUS_OUT_OF_RANGE, "cpu: the launch grid has too many programs");
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
      return nullptr; // an empty grid launches nothing
    std::vector<interp::ArgValue> args;
    std::vector<tl_cpu_arg> native_args;
    for (uint32_t i = 0; i < launch->arg_count; ++i) {
      const tl_vendor_arg &a = launch->args[i];
      if (a.dtype >= TL_DTYPE_COUNT || a.rank > TL_HAL_MAX_RANK)
        return plugin.status(TL_STATUS_INVALID_ARGUMENT, "cpu: argument #" + std::to_string(i) +
                                                             " has an invalid dtype or rank");
      if (exe.program->native)
        native_args.push_back(native_arg(a));
      else
        args.push_back(to_arg(a));
    }
    tbb::task_arena *arena = s.device()->arena.get();
    if (exe.program->native) {
      tl_cpu_kernel_fn fn = exe.program->entries[launch->kernel];
      s.enqueue([program = exe.program, fn, name, args = std::move(native_args), grid, arena] {
        return run_native_grid(*arena, fn, name, args, grid);
      });
      return nullptr;
    }
    const ir::Kernel *kernel = exe.program->kernels[launch->kernel];
    s.enqueue([program = exe.program, kernel, args = std::move(args), grid, arena] {
      return run_grid(*arena, *kernel, args, grid);
    });
    return nullptr;
  });
}

} // namespace tl::cpu
