// Executables and launches of the cpu plugin: llvm-cpu native code run on oneTBB workers.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include "tl/format/llvm_cpu_loader.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <string_view>
#include <vector>

namespace tl::cpu {
namespace {

/// What a launch needs, shared with queued launches so that freeing the executable is safe: the
/// linked object code and each kernel's entry, in the image's kernel order.
struct Program {
  std::unique_ptr<llvm_cpu::LoadedProgram> native;
  std::vector<tl_cpu_kernel_fn> entries;
  std::vector<std::string> names;
  std::vector<uint32_t> param_counts;
};

struct Executable {
  Device *device = nullptr;
  std::shared_ptr<const Program> program;
};

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

/// The grid as program ids; false if its program count does not fit in int64.
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
    if (target != "llvm-cpu")
      return plugin.status(TL_STATUS_INCOMPATIBLE, "cpu: the executable is for target '" + target +
                                                       "'; the cpu device runs 'llvm-cpu'");
    auto program = std::make_shared<Program>();
    for (uint32_t k = 0; k < image->kernel_count; ++k) {
      program->names.push_back(image->kernels[k].name ? image->kernels[k].name : "");
      program->param_counts.push_back(image->kernels[k].param_count);
    }
    if (const std::string msg = load_native(*image, *program); !msg.empty())
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
    std::vector<tl_cpu_arg> native_args;
    for (uint32_t i = 0; i < launch->arg_count; ++i) {
      const tl_vendor_arg &a = launch->args[i];
      if (a.dtype >= TL_DTYPE_COUNT || a.rank > TL_HAL_MAX_RANK)
        return plugin.status(TL_STATUS_INVALID_ARGUMENT, "cpu: argument #" + std::to_string(i) +
                                                             " has an invalid dtype or rank");
      native_args.push_back(native_arg(a));
    }
    tbb::task_arena *arena = s.device()->arena.get();
    tl_cpu_kernel_fn fn = exe.program->entries[launch->kernel];
    s.enqueue([program = exe.program, fn, name, args = std::move(native_args), grid, arena] {
      return run_native_grid(*arena, fn, name, args, grid);
    });
    return nullptr;
  });
}

} // namespace tl::cpu
